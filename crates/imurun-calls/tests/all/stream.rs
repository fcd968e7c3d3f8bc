//! StreamGuard over every split of the corpus into tokens: what it releases equals the raw
//! text before the first call marker outside a thought, and no released chunk holds a
//! marker or part of one.

use imurun_calls::{CALL_MARKERS, ParseKind, StreamGuard, parse_tool_calls, split_think};
use proptest::prelude::*;

use crate::common::{corpus, index_for};

/// Splits `text` at the given cut points (moved to char boundaries).
fn split_at(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|&cut| {
            let mut at = cut % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            at
        })
        .collect();
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|pair| text[pair[0]..pair[1]].to_owned())
        .collect()
}

/// What the guard must release in total for this raw text.
fn expected_release(raw: &str, kind: ParseKind, marker: Option<usize>) -> &str {
    match (kind, marker) {
        (ParseKind::Answer, _) | (_, None) => raw,
        (_, Some(at)) => &raw[..at],
    }
}

fn check_stream(
    raw: &str,
    tokens: &[String],
    index: &imurun_core::ToolIndex,
) -> Result<(), TestCaseError> {
    let parsed = parse_tool_calls(raw, index);
    let mut guard = StreamGuard::new();
    let mut released = String::new();
    for token in tokens {
        let chunk = guard.push(token);
        released.push_str(&chunk);
        prop_assert!(
            raw.starts_with(&released),
            "released text is not a prefix of the raw text"
        );
        // No released chunk holds a call marker outside a thought, nor the start of one
        // that the rest of the text completes.
        let visible = split_think(&released).visible;
        for marker in CALL_MARKERS {
            prop_assert!(
                !visible.contains(marker),
                "released {marker:?} in {released:?}"
            );
        }
    }
    if parsed.kind != ParseKind::Answer
        && let Some(marker) = parsed.marker_offset
    {
        // Before the end, everything up to the marker and nothing after it.
        prop_assert_eq!(&released, &raw[..marker], "while streaming");
    }
    released.push_str(&guard.finish(&parsed));
    prop_assert_eq!(
        released.as_str(),
        expected_release(raw, parsed.kind, parsed.marker_offset)
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_split_of_any_corpus_text(cuts in prop::collection::vec(any::<usize>(), 0..40)) {
        for case in corpus() {
            let tokens = split_at(&case.text, &cuts);
            check_stream(&case.text, &tokens, &index_for(&case))?;
        }
    }

    #[test]
    fn byte_by_byte_and_whole(text_index in 0usize..64) {
        let cases = corpus();
        let case = &cases[text_index % cases.len()];
        let chars: Vec<String> = case.text.chars().map(String::from).collect();
        check_stream(&case.text, &chars, &index_for(case))?;
        check_stream(&case.text, std::slice::from_ref(&case.text), &index_for(case))?;
    }
}

#[test]
fn the_corpus_streaming_case_releases_nothing() {
    for case in corpus() {
        let Some(chunks) = &case.chunks else { continue };
        let index = index_for(&case);
        let parsed = parse_tool_calls(&case.text, &index);
        let mut guard = StreamGuard::new();
        let mut released: String = chunks.iter().map(|chunk| guard.push(chunk)).collect();
        released.push_str(&guard.finish(&parsed));
        if let Some(visible) = &case.expect.visible {
            assert_eq!(released.trim(), visible.trim(), "{}", case.id);
        }
    }
}
