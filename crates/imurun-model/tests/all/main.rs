//! imurun-model integration tests, in one binary to keep link times down.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod concurrency;
mod docs;
mod embedded;
mod http_server;
mod llama_server;
mod ollama;
mod openai;
mod prompt_reuse;
mod replay;
mod script_file;
mod template_fixtures;
