//! Every case of the shared sample corpus parses as expected through the library.

use imurun_calls::parse_tool_calls;

use crate::common::{corpus, index_for, mismatch};

#[test]
fn every_corpus_case_parses_as_expected() {
    let cases = corpus();
    assert!(
        cases.len() >= 25,
        "the corpus shrank to {} cases",
        cases.len()
    );
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let parsed = parse_tool_calls(&case.text, &index_for(case));
            mismatch(&parsed, &case.expect).map(|problem| format!("{}: {problem}", case.id))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} corpus case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn corpus_chunks_join_back_to_their_text() {
    for case in corpus() {
        if let Some(chunks) = &case.chunks {
            assert_eq!(chunks.concat(), case.text, "{}", case.id);
        }
    }
}
