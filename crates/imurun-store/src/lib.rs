//! imurun's persistence: one SQLite database or one PostgreSQL database through `sqlx`'s `Any`
//! driver, with embedded migrations for each dialect.
//!
//! [`Store`] opens (and creates, and migrates) the database; each table's queries live in a module
//! of their own, as `impl Store` blocks:
//!
//! - the audit log: [`AuditWriter`] implements [`imurun_core::AuditSink`] and commits records in
//!   batches off the caller's path; [`Store::recent_audit`] reads them back;
//! - sessions (`sessions.rs`): create, list newest first, get, rename, delete with everything in
//!   them;
//! - transcripts (`transcripts.rs`): each session's prompts and final answers in order; an append
//!   is committed and synced when it returns;
//! - turn views (`turns.rs`): one row per turn with its status and the UI's JSON view of it, and
//!   [`Store::mark_interrupted_turns`] for the turns a crash left running;
//! - settings (`settings.rs`): keys with JSON values, written one at a time or all in one
//!   transaction.
//!
//! Every input has a stated bound (the `*_MAX` constants) and is checked before it reaches a
//! query; a refused input is a [`StoreError`], never a panic. The store stamps every time itself,
//! in milliseconds since the Unix epoch. Keep mode's tables are in `keep/`, one file per table:
//! every Keep write is a [`KeepTx`], which serialises Keep's writes and appends to the
//! hash-chained journal in the same transaction.
//!
//! The queries run unchanged on both engines (`$n` placeholders, portable types, `RETURNING` and
//! `ON CONFLICT`, which both dialects have); only the migrations' DDL is per dialect
//! (`migrations/README.md`). [`Store::open`] opens a SQLite file, [`Store::open_url`] a
//! `postgres://` (or `sqlite://`) URL.
//!
//! This crate knows nothing of HTTP, agents or policy: it stores what it is given.

mod audit;
mod audit_writer;
mod bounds;
mod clock;
mod error;
mod keep;
mod notify;
mod sessions;
mod settings;
mod store;
mod transcripts;
mod turns;

pub use audit::{AUDIT_READ_ROWS_MAX, AuditRow};
pub use audit_writer::{AuditStats, AuditWriter, AuditWriterOptions};
pub use bounds::ID_CHARS_MAX;
pub use error::{DatabaseError, MigrationError, StoreError};
pub use keep::{
    AgentRow, CONVERSATION_ENTRIES_MAX, CONVERSATIONS_KEPT_MAX, DeviceRow, DocumentRow,
    EgressWaitRow, JournalDraft, JournalFilter, JournalRow, JournalSnapshot,
    KEEP_JOURNAL_READ_ROWS_MAX, KEEP_LIST_ROWS_MAX, KeepTx, MessageRow, NewAgent, NewMessage,
    NewTool, NewToolProposal, ProposalRow, SessionRow, TokenRow, TokenUser, ToolProposalRow,
    ToolRow, VaultEntryRow,
};
pub use notify::{Heard, HostClaim, Listener, NOTIFY_PAYLOAD_BYTES_MAX};
pub use sessions::{SESSION_LIST_ROWS_MAX, SESSION_TITLE_CHARS_MAX, Session};
pub use settings::{SETTING_VALUE_BYTES_MAX, SETTINGS_MAX, SETTINGS_WRITE_ENTRIES_MAX};
pub use store::{Backend, Store, create_private_dir_all, redact_url};
pub use transcripts::{
    MESSAGE_CONTENT_BYTES_MAX, Message, Role, TRANSCRIPT_MESSAGES_MAX, TRANSCRIPT_READ_ROWS_MAX,
};
pub use turns::{TURN_LIST_ROWS_MAX, TURN_PROMPT_BYTES_MAX, TURN_VIEW_BYTES_MAX, Turn, TurnStatus};
