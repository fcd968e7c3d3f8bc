//! imurun's HTTP server: the only crate that knows HTTP.
//!
//! - [`hub`]: the live event hub, which numbers the events of the agent layer, keeps the
//!   latest for replay and fans them out without waiting for slow clients;
//! - [`sse`]: the SSE endpoint's wire format;
//! - [`routes`](router): the API, one file per route group, with request and response bodies
//!   in [`wire`] and every error as one [`ApiError`];
//! - [`openapi`]: the OpenAPI document of `GET /api/openapi.json`, from the handlers'
//!   annotations, which are also where the router reads each method and path;
//! - turn tasks: a prompt starts a turn on a task of its own, whose events are recorded into
//!   the turn's view and whose prompt and answers go into the transcript.
//!
//! The binary builds a [`ServerState`] from [`ServerParts`] and calls [`serve`]:
//!
//! ```text
//! let hub = EventHub::default();
//! let executor = Arc::new(ToolExecutor::new(registry, workspace, settings, Arc::new(hub.clone()), audit));
//! let model = ModelSlot::new();            // keep a clone; set_loading / set_ready / set_failed
//! let state = ServerState::new(ServerParts { store, executor, hub, model: model.clone(),
//!                                            skills, agent_config, options: ServerOptions::default(),
//!                                            mcp: Arc::new(McpHub::default()) });
//! serve(listener, state, shutdown_signal).await?;
//! ```

mod auth;
mod error;
mod events;
pub mod hub;
mod keep_auth;
pub mod keep_events;
pub mod keep_hubs;
pub mod keep_shared;
pub mod keep_wire;
pub mod openai_wire;
pub mod openapi;
mod routes;
pub mod sse;
mod state;
pub mod tls;
mod turns;
pub mod wire;

use std::future::Future;

pub use error::{ApiError, ApiJson, OptionalApiJson, SecretJson, StrictJson};
pub use events::ServerEvent;
pub use hub::{
    BUFFER_EVENTS_MAX_DEFAULT, EventHub, EventRecord, HubConfig, HubError,
    QUEUE_EVENTS_MAX_DEFAULT, Subscription,
};
pub use keep_hubs::KeepHubs;
pub use keep_shared::{KEEP_EVENTS_CHANNEL, SharedKeepEvents, listen_to_other_hosts};
pub use openapi::api_document;
pub use routes::page::{CONTENT_SECURITY_POLICY, asset_names, asset_paths};
pub use routes::{
    APPROVAL_TIMEOUT_KEY, REQUEST_ID_HEADER, page_operations, router, served_operations,
};
pub use sse::{HEARTBEAT_INTERVAL_DEFAULT, StreamQuery, last_event_id, sse_message, sse_response};
pub use state::{
    APPROVAL_TIMEOUT_S_MAX, AppState, BODY_BYTES_MAX_DEFAULT, ModelSlot, ModelStatus,
    PERSONA_CHARS_MAX, PROMPT_CHARS_MAX, STOP_WAIT_DEFAULT, ServerOptions, ServerParts,
    ServerState,
};

/// Runs the API on `listener` until `shutdown` completes.
///
/// Before the first request it runs [`ServerState::start_up`] (turns a previous process left
/// running become `interrupted`; saved settings are applied). When `shutdown` completes, every
/// running turn is stopped and every SSE stream ends, then the server waits for the requests
/// in flight. Fails only if start-up cannot read the store or the listener fails.
pub async fn serve<L>(
    listener: L,
    state: ServerState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    state.start_up().await.map_err(std::io::Error::other)?;
    let app = router(state.clone());
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            state.begin_shutdown();
        })
        .await
}
