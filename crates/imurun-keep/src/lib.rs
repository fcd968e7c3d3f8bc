//! Keep mode's rules, as pure functions over documents and bytes, and the one place that applies
//! them to the host's state.
//!
//! - [`canonical`]: RFC 8785 canonical JSON, the bytes every signature covers, and the strict
//!   reader for signed documents;
//! - [`keys`]: Ed25519 keys, ids, key files and signatures;
//! - [`host`]: the normal form of a host name before anything stores or compares it;
//! - [`manifest`]: a pack's manifest, typed and bounded;
//! - [`documents`]: signed envelopes and the documents the operator signs (policies, ceilings,
//!   trust roots);
//! - [`trust`]: which key may sign what, rotation, expiry and rollback;
//! - [`decision`]: the one format for everything a person's device decides, and its verifier;
//! - [`journal`]: the hash chain and its check;
//! - [`vault`]: sealing credentials at rest;
//! - [`seal`]: the host key's seal over each stored row it accepted;
//! - [`tokens`]: bearer tokens and enrolment codes, kept only as hashes;
//! - [`high_water`]: the high-water marks kept outside the database too;
//! - [`init`]: `keep init`'s folder, keys and first trust root, and opening the service;
//! - [`service`]: the rules applied to the host's state in the store, one method per request;
//! - [`tool_intake`]: reading a cell's `tool.propose`, bounded, and the look-alike check of
//!   tool names;
//! - [`authority`]: a proposed tool's authority diff against its agent, and its manifest
//!   clamped by the person's ceiling;
//! - [`cells`]: live sessions' cells, what the host does for each import, egress approvals
//!   waiting for a person, taint, and the events sessions publish.
//!
//! This crate knows nothing of HTTP: the server maps its errors and results to the wire.

pub mod authority;
pub mod canonical;
pub mod cells;
pub mod decision;
pub mod documents;
mod error;
pub mod high_water;
pub mod host;
pub mod init;
pub mod journal;
pub mod keys;
pub mod manifest;
pub mod proposals;
mod random;
pub mod seal;
pub mod service;
pub mod tokens;
pub mod tool_intake;
pub mod trust;
pub mod vault;

pub use error::KeepError;
