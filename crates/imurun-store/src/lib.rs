//! imurun's persistence: one SQLite database through `sqlx`, with embedded migrations.
//!
//! [`Store`] opens (and creates, and migrates) the database; each table's queries live in a module
//! of their own. The audit log is the first table: [`AuditWriter`] implements
//! [`imurun_core::AuditSink`] and commits records in batches off the caller's path. Sessions,
//! transcripts, turn views, settings and Keep state join as further tables and modules.
//!
//! The queries are written to run unchanged on PostgreSQL (`$n` placeholders, portable types), so
//! that Keep hosts can move there; only the migrations' DDL is per dialect.
//!
//! This crate knows nothing of HTTP, agents or policy: it stores what it is given.

mod audit;
mod audit_writer;
mod error;
mod store;

pub use audit::{AUDIT_READ_ROWS_MAX, AuditRow};
pub use audit_writer::{AuditStats, AuditWriter, AuditWriterOptions};
pub use error::StoreError;
pub use store::Store;
