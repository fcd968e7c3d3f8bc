//! Chat templates render byte for byte as Python's `jinja2` renders them the way Hugging
//! Face's `apply_chat_template` does: `tests/fixtures/templates/expected.json` was written
//! by `scripts/make-template-fixtures.py` (see `SOURCES.md` there).

use imurun_core::{Message, Role};
use imurun_model::{CHATML_TEMPLATE, ChatTemplate, GgufInfo};
use serde::Deserialize;

use crate::embedded::model_path;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/templates");

#[derive(Debug, Deserialize)]
struct Fixtures {
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
struct Case {
    template: String,
    conversation: String,
    bos_token: String,
    eos_token: String,
    add_generation_prompt: bool,
    messages: Vec<FixtureMessage>,
    expected: String,
}

#[derive(Debug, Deserialize)]
struct FixtureMessage {
    role: String,
    content: String,
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
}

fn cases() -> Vec<Case> {
    let fixtures: Fixtures = serde_json::from_str(&fixture("expected.json")).unwrap();
    fixtures.cases
}

fn message(fixture: &FixtureMessage) -> Message {
    let role = match fixture.role.as_str() {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => panic!("unknown role {other}"),
    };
    Message::new(role, fixture.content.clone())
}

#[test]
fn templates_render_byte_for_byte_as_jinja2_renders_them() {
    let cases = cases();
    let templates: std::collections::BTreeSet<&str> =
        cases.iter().map(|case| case.template.as_str()).collect();
    assert_eq!(
        templates.into_iter().collect::<Vec<_>>(),
        [
            "chatml.jinja",
            "llama-3-8b-instruct.jinja",
            "qwen2.5-instruct.jinja",
            "smollm2-135m-instruct.jinja"
        ]
    );
    for case in &cases {
        let template =
            ChatTemplate::new(&fixture(&case.template), &case.bos_token, &case.eos_token).unwrap();
        let messages: Vec<Message> = case.messages.iter().map(message).collect();
        let rendered = template
            .render(&messages, case.add_generation_prompt)
            .unwrap();
        assert_eq!(
            rendered, case.expected,
            "{} / {}",
            case.template, case.conversation
        );
    }
}

#[test]
fn the_chatml_fixture_is_the_fallback_template() {
    assert_eq!(fixture("chatml.jinja"), CHATML_TEMPLATE);
}

#[test]
fn the_smollm2_fixture_is_the_default_models_own_template() {
    let info = GgufInfo::read(model_path()).unwrap();
    assert_eq!(
        info.chat_template.as_deref(),
        Some(fixture("smollm2-135m-instruct.jinja").as_str())
    );
}
