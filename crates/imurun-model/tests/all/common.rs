//! Helpers shared by the test modules: one place that calls `generate`.

use imurun_core::{GenerateRequest, Message, Model, ModelError};
use imurun_model::ScriptedModel;

/// A request whose only message is this user prompt.
pub(crate) fn ask(prompt: &str) -> GenerateRequest {
    GenerateRequest::new(vec![Message::user(prompt)])
}

/// Runs one generation; returns its result and the pieces streamed, in order.
pub(crate) async fn generate(
    model: &ScriptedModel,
    request: &GenerateRequest,
) -> (Result<String, ModelError>, Vec<String>) {
    let mut pieces = Vec::new();
    let mut on_token = |piece: &str| pieces.push(piece.to_owned());
    let result = model.generate(request, &mut on_token).await;
    (result, pieces)
}

/// The answer of one generation that must succeed, checking that its pieces join to it.
pub(crate) async fn answer(model: &ScriptedModel, request: &GenerateRequest) -> String {
    let (result, pieces) = generate(model, request).await;
    let answer = result.unwrap();
    assert_eq!(
        pieces.concat(),
        answer,
        "the streamed pieces join to the answer"
    );
    answer
}
