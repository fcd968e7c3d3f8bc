//! The integration tests of imurun-store on SQLite, in one binary to keep link times down. The
//! modules live in `tests/all/`, where cargo does not mistake them for test binaries of their
//! own. `tests/postgres/` runs the modules that are not about SQLite's files on PostgreSQL.

/// The engine `support::fresh` opens.
const BACKEND: imurun_store::Backend = imurun_store::Backend::Sqlite;

mod backpressure;
// Kills a child process with SIGKILL: Unix only, like imurun itself.
#[cfg(unix)]
mod child;
// Kills a child process with SIGKILL and checks how it died: Unix only, like imurun itself.
#[cfg(unix)]
mod durability;
mod keep_conversations;
mod keep_people;
mod keep_sessions;
mod limits;
mod migrations;
mod reopen;
mod round_trip;
mod sessions;
mod settings;
mod support;
// Kills a child process with SIGKILL, like `durability`.
#[cfg(unix)]
mod transcript_durability;
mod transcripts;
mod turns;
