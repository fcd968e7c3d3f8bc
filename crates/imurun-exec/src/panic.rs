//! The panic boundary: a tool that panics — while building its future or while it runs —
//! becomes a failure result, so a bug in one tool cannot take a turn down with it.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use imurun_core::{BoxFuture, Tool, ToolContext, ToolOutput};
use serde_json::{Map, Value};

/// How much of a panic message the failure quotes.
const PANIC_MESSAGE_CHARS_MAX: usize = 300;

/// Runs `tool`, turning a panic into a `FAILED:` result.
///
/// `AssertUnwindSafe` is sound here because nothing the tool borrowed is used after it
/// panicked: the future is dropped and the failure returned.
pub(crate) async fn run_caught(
    tool: &dyn Tool,
    context: &ToolContext,
    args: &Map<String, Value>,
) -> ToolOutput {
    let name = tool.spec().name.as_str();
    let future = match catch_unwind(AssertUnwindSafe(|| tool.run(context, args))) {
        Ok(future) => future,
        Err(payload) => return crashed(name, payload.as_ref()),
    };
    match (CatchUnwind { future }).await {
        Ok(output) => output,
        Err(payload) => crashed(name, payload.as_ref()),
    }
}

/// Polls a boxed future inside `catch_unwind`. After a panic it is never polled again: the
/// first poll that panics returns `Ready(Err)`.
struct CatchUnwind<'a> {
    future: BoxFuture<'a, ToolOutput>,
}

impl Future for CatchUnwind<'_> {
    type Output = Result<ToolOutput, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.future;
        match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(context))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        }
    }
}

fn crashed(tool: &str, payload: &(dyn Any + Send)) -> ToolOutput {
    let message = payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    let message: String = message.chars().take(PANIC_MESSAGE_CHARS_MAX).collect();
    ToolOutput::failed(format!(
        "`{tool}` crashed (a bug in the tool, not in the call): {message}"
    ))
}
