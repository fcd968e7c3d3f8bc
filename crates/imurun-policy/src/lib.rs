//! imurun's security decisions, and nothing else: workspace confinement, protected paths,
//! permission modes and toggles, the destructive-command deny-list, credential scrubbing for
//! child processes, and remembered grants.
//!
//! Decisions are pure: they read the facts of a call ([`CallFacts`]) and the person's
//! [`Settings`], and say allow, ask or deny with a reason ([`check`]). The policy never sees
//! model text and never decides by a tool's name. The one kind of I/O here is the
//! filesystem: resolving real paths, and the [`Workspace`] file operations that open through
//! a capability handle so a check cannot be raced. Approvals that wait for a person live in
//! the executor (`imurun-tools`); this crate only holds the [`Grants`] they leave behind.
//!
//! `docs/permissions.md` documents every rule; tests keep it and the code in step.

mod decide;
mod deny;
mod env;
mod files;
mod grants;
mod mode;
mod protected;
mod realpath;
mod workspace;

pub use decide::{
    CALL_PATHS_MAX, CallFacts, Rule, Settings, TAINT_ASKS, TAINT_REASON, Verdict, check,
    table_verdict,
};
pub use deny::{COMMAND_BYTES_MAX, CommandRisk, OPAQUE_REASON, command_risk, destructive_reason};
pub use env::{AGENTS_AND_TICKETS, is_credential_env, is_credential_url, without_credentials};
pub use files::{EntryKind, FileError, LIST_SCAN_ENTRIES_MAX, ListEntry, Listing, Removed};
pub use grants::{GRANT_SESSIONS_MAX, GRANTS_PER_SESSION_MAX, GrantError, Grants, is_rememberable};
pub use mode::{CATEGORIES, Mode, Toggles, UnknownMode, mode_table};
pub use workspace::{
    PATH_BYTES_MAX, PATH_COMPONENTS_MAX, PathDenial, Target, Workspace, WorkspaceConfig,
    WorkspaceError, WorkspacePath,
};
