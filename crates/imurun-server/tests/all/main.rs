//! The integration tests of imurun-server, in one binary to keep link times down. The modules
//! live in `tests/all/`, where cargo does not mistake them for test binaries of their own.

mod api_grounding;
mod api_routes;
mod api_skills;
mod api_support;
mod api_turns;
mod auth;
mod backpressure;
mod filter;
mod has_subscriber;
mod keep;
mod keep_authority;
mod keep_people;
mod keep_sessions;
mod keep_shapes;
mod keep_tools;
mod load_small;
mod openai_facade;
mod openapi;
mod openapi_events;
mod openapi_keep_events;
mod ordering;
mod page;
mod replay;
mod sse_snapshot;
mod sse_wire;
mod support;
