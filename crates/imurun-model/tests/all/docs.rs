//! `docs/scripted-model.md` shows working scripts: every ```` ```json ```` block in it reads
//! as a script, so the reference cannot drift from the reader.

use imurun_model::Script;

use crate::common::{answer, ask};

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/scripted-model.md");
    std::fs::read_to_string(path).unwrap()
}

/// The bodies of the page's ```` ```json ```` blocks, in order.
fn json_blocks(doc: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```json") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn every_json_example_in_the_docs_is_a_valid_script() {
    let blocks = json_blocks(&doc());
    assert!(blocks.len() >= 4, "the page has its examples");
    for block in blocks {
        if let Err(error) = Script::from_json(&block) {
            panic!("docs/scripted-model.md example does not read: {error}\n{block}");
        }
    }
}

/// The "Answering by prompt" example answers each question whatever order they come in.
#[tokio::test]
async fn the_answering_by_prompt_example_answers_by_prompt() {
    let block = json_blocks(&doc())
        .into_iter()
        .find(|block| block.contains("\"joke\""))
        .unwrap();
    let model = Script::from_json(&block).unwrap().model();
    let cases = [
        ("tell me a joke", "Why did the tool call cross the road?"),
        ("hello", "Ask me about the weather or for a joke."),
        ("weather in Lima?", "I can't check live weather right now."),
        ("another joke", "Ask me about the weather or for a joke."),
    ];
    for (prompt, expect) in cases {
        assert_eq!(
            answer(&model, &ask(prompt)).await,
            expect,
            "prompt {prompt:?}"
        );
    }
}
