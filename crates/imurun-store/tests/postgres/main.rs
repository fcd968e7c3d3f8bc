//! The store's integration tests on PostgreSQL: the modules of `tests/all/` that are not about
//! SQLite's files (its crash durability, its migration history), run against a database of
//! their own on the server `scripts/test` starts (`IMURUN_TEST_POSTGRES`), and the checks that
//! the two dialects' migrations build the same schema.

/// The engine `support::fresh` opens.
const BACKEND: imurun_store::Backend = imurun_store::Backend::Postgres;

#[path = "../all/backpressure.rs"]
mod backpressure;
#[path = "../all/keep_conversations.rs"]
mod keep_conversations;
#[path = "../all/keep_people.rs"]
mod keep_people;
#[path = "../all/keep_sessions.rs"]
mod keep_sessions;
#[path = "../all/limits.rs"]
mod limits;
#[path = "../all/reopen.rs"]
mod reopen;
#[path = "../all/round_trip.rs"]
mod round_trip;
mod schema;
#[path = "../all/sessions.rs"]
mod sessions;
#[path = "../all/settings.rs"]
mod settings;
#[path = "../all/support.rs"]
mod support;
#[path = "../all/transcripts.rs"]
mod transcripts;
#[path = "../all/turns.rs"]
mod turns;
