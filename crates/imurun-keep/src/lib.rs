//! The Keep host: the one place that applies Keep's rules (`imurun-keep-rules`) to the host's
//! state. The rules' modules are re-exported here, so the server and the binary reach Keep
//! through this crate alone.
//!
//! - [`service`]: the rules applied to the host's state in the store, one method per request;
//! - [`cells`]: live sessions' cells, what the host does for each import, egress approvals
//!   waiting for a person, taint, and where the events go;
//! - [`events`]: the events a person's stream carries, typed ([`events::KeepEvent`]);
//! - [`init`]: `keep init`'s folder, keys and first trust root, and opening the service;
//! - [`key_files`]: secret key files, private to their owner;
//! - [`high_water`]: the high-water marks kept outside the database too;
//! - [`random`]: the operating system's random numbers, passed to the rules.
//!
//! This crate knows nothing of HTTP: the server maps its errors and results to the wire.

pub use imurun_keep_rules::{
    RuleError, authority, canonical, checks, decision, documents, host, journal, journal_detail,
    keys, manifest, proposals, seal, tokens, tool_intake, trust, vault,
};

pub mod cells;
mod error;
pub mod events;
pub mod high_water;
pub mod init;
pub mod key_files;
pub mod random;
pub mod service;

pub use error::KeepError;
