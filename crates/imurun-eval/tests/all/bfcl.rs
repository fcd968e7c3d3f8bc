//! The BFCL scorer against BFCL's own data: the ground truth scores 100% in every category,
//! and each kind of wrong answer is scored wrong.

use std::path::PathBuf;

use imurun_core::ToolCall;
use imurun_eval::{
    CATEGORIES, Case, Category, Mismatch, ground_truth_prediction, load_category, score_case,
};
use serde_json::{Value, json};

/// BFCL's data in the repository's `testdata/bfcl` (its `SOURCE.md` names where it comes from).
fn bfcl_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/bfcl")
}

fn case(category: Category, id: &str) -> Case {
    load_category(&bfcl_dir(), category, None)
        .unwrap()
        .into_iter()
        .find(|case| case.id == id)
        .unwrap()
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::new(name, args.as_object().cloned().unwrap())
}

#[test]
fn the_ground_truth_scores_one_hundred_percent_in_every_category() {
    for category in CATEGORIES {
        let cases = load_category(&bfcl_dir(), category, None).unwrap();
        assert!(
            cases.len() >= 200,
            "{}: {} cases",
            category.name(),
            cases.len()
        );
        for case in &cases {
            let prediction = ground_truth_prediction(case);
            assert_eq!(
                score_case(case, &prediction.calls),
                Ok(()),
                "{}: {:?}",
                case.id,
                prediction.calls
            );
        }
    }
}

/// Whether a mismatch is the kind a case expects.
type IsExpected = fn(&Mismatch) -> bool;

#[test]
fn every_kind_of_wrong_answer_is_scored_wrong() {
    // simple_python_0: calculate_triangle_area(base=10, height=5, unit in ["units", ""]).
    let triangle = case(Category::Simple, "simple_python_0");
    let right = call("calculate_triangle_area", json!({"base": 10, "height": 5}));
    assert_eq!(score_case(&triangle, std::slice::from_ref(&right)), Ok(()));
    let cases: Vec<(Vec<ToolCall>, IsExpected)> = vec![
        (
            vec![call("triangle_area", json!({"base": 10, "height": 5}))],
            |m| matches!(m, Mismatch::WrongName { .. }),
        ),
        (
            vec![call("calculate_triangle_area", json!({"base": 10}))],
            |m| matches!(m, Mismatch::MissingRequired { .. }),
        ),
        (
            vec![call(
                "calculate_triangle_area",
                json!({"base": 10, "height": 5, "color": "red"}),
            )],
            |m| matches!(m, Mismatch::Unexpected { .. }),
        ),
        (
            vec![call(
                "calculate_triangle_area",
                json!({"base": "10", "height": 5}),
            )],
            |m| matches!(m, Mismatch::WrongType { .. }),
        ),
        (
            vec![call(
                "calculate_triangle_area",
                json!({"base": 10.0, "height": 5}),
            )],
            |m| matches!(m, Mismatch::WrongType { .. }),
        ),
        (
            vec![call(
                "calculate_triangle_area",
                json!({"base": 11, "height": 5}),
            )],
            |m| matches!(m, Mismatch::UnacceptableValue { .. }),
        ),
        (
            vec![call(
                "calculate_triangle_area",
                json!({"base": 10, "height": 5, "unit": "cm"}),
            )],
            |m| matches!(m, Mismatch::UnacceptableValue { .. }),
        ),
        (vec![], |m| {
            matches!(
                m,
                Mismatch::WrongCount {
                    expected: 1,
                    got: 0
                }
            )
        }),
        (vec![right.clone(), right.clone()], |m| {
            matches!(
                m,
                Mismatch::WrongCount {
                    expected: 1,
                    got: 2
                }
            )
        }),
    ];
    for (calls, is_expected) in cases {
        let result = score_case(&triangle, &calls);
        assert!(
            result.as_ref().is_err_and(is_expected),
            "{calls:?} gave {result:?}"
        );
    }
}

#[test]
fn bfcl_normalises_strings_and_accepts_ints_for_floats() {
    // parallel_multiple_1 declares float parameters and lists 7.0 as acceptable.
    let areas = case(Category::ParallelMultiple, "parallel_multiple_1");
    let calls = vec![
        call("area_circle.calculate", json!({"radius": 5})),
        call(
            "area_rectangle.calculate",
            json!({"length": 7, "breadth": 3.0}),
        ),
    ];
    assert_eq!(
        score_case(&areas, &calls),
        Ok(()),
        "any order, and 7 for 7.0"
    );

    let prediction = ground_truth_prediction(&case(Category::Simple, "simple_python_0"));
    assert_eq!(prediction.calls.len(), 1);
    assert_eq!(
        prediction.calls[0].args["unit"], "units",
        "the first acceptable value of the declared type"
    );
}

#[test]
fn an_optional_parameter_the_answer_needs_is_missing() {
    // Find a case with an optional parameter whose acceptable values do not include "".
    let cases = load_category(&bfcl_dir(), Category::Simple, None).unwrap();
    let (case, parameter) = cases
        .iter()
        .find_map(|case| {
            let required: Vec<&str> = case.functions[0]["parameters"]["required"]
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let (_, expected) = case.ground_truth[0].iter().next()?;
            expected
                .as_object()?
                .iter()
                .find_map(|(parameter, options)| {
                    let needed = !options
                        .as_array()?
                        .iter()
                        .any(|option| option.as_str() == Some(""));
                    (needed && !required.contains(&parameter.as_str()))
                        .then(|| (case, parameter.clone()))
                })
        })
        .expect("BFCL has such a case");
    let mut prediction = ground_truth_prediction(case);
    prediction.calls[0].args.remove(&parameter);
    assert!(
        matches!(
            score_case(case, &prediction.calls),
            Err(Mismatch::MissingOptional { .. })
        ),
        "{}",
        case.id
    );
}

#[test]
fn irrelevance_is_right_only_without_a_call() {
    let irrelevant = load_category(&bfcl_dir(), Category::Irrelevance, Some(1))
        .unwrap()
        .remove(0);
    assert_eq!(score_case(&irrelevant, &[]), Ok(()));
    let name = irrelevant.tools[0].name.clone();
    assert_eq!(
        score_case(&irrelevant, &[call(&name, json!({}))]),
        Err(Mismatch::CalledIrrelevant { got: 1 })
    );
}

#[test]
fn bad_data_is_a_clear_error() {
    let dir = tempfile_dir();
    assert!(
        load_category(&dir, Category::Simple, None)
            .unwrap_err()
            .to_string()
            .contains("BFCL_v4_simple_python.json")
    );
    std::fs::write(
        dir.join("BFCL_v4_irrelevance.json"),
        "{\"id\": \"x\"}\nnot json\n",
    )
    .unwrap();
    let error = load_category(&dir, Category::Irrelevance, None)
        .unwrap_err()
        .to_string();
    assert!(error.contains("line 2"), "{error}");
    std::fs::write(dir.join("BFCL_v4_irrelevance.json"), "{\"id\": \"x\"}\n").unwrap();
    let error = load_category(&dir, Category::Irrelevance, None)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("line 1") && error.contains("function"),
        "{error}"
    );
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("imurun-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
