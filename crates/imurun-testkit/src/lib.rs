//! Test helpers shared by imurun's test suites (a dev-dependency only): a scripted
//! [`TestModel`], sinks that record events and audit records, fake tools, a temporary
//! workspace laid out for confinement tests, a raw SSE client, a check that a process is
//! gone, Keep mode's guest components built for `wasm32-wasip2`, a local HTTP upstream that
//! counts what reaches it, llama.cpp's own `llama-server` started on a free port, and
//! PostgreSQL databases and servers for the tests that run on PostgreSQL.
//!
//! It depends on `imurun-core` and `imurun-policy` (the workspace) only, so any crate's tests
//! may use it without pulling in an HTTP client, MCP or a model back-end. The feature `tls`
//! adds the upstream over TLS ([`Upstream::start_tls`]), for the suites that follow a
//! credential to its upstream.

mod guests;
mod llama_server;
mod model;
mod models;
mod postgres;
mod process;
mod repository;
mod sinks;
mod sse;
#[cfg(feature = "tls")]
mod tls;
#[cfg(feature = "tls")]
pub use tls::self_signed_pem;
mod tools;
mod upstream;
mod workspace;

pub use guests::{Guest, guests_dir};
pub use llama_server::{LlamaServer, llama_server_binary};
pub use model::{Reply, TestModel};
pub use models::{DEFAULT_MODEL_FILE, MODEL_TEST_THREADS, default_model_path};
pub use postgres::{PostgresServer, TEST_POSTGRES_VAR, TestDatabase, test_postgres_url};
pub use process::is_gone;
pub use repository::repository;
pub use sinks::{RecordingAudit, RecordingEvents, event_type};
pub use sse::{SSE_WAIT_MAX, SseClient, SseMessage};
pub use tools::{Behaviour, FakeGroup, FakeTool, call, context, object};
pub use upstream::{Accept, Accepted, Upstream, UpstreamStream, ok, redirect};
pub use workspace::TempWorkspace;
