//! Keep mode's rules, as pure, synchronous functions over documents and bytes: no I/O, no
//! runtime, no store and no cell. The host (`imurun-keep`) reads the state, calls these, and
//! applies what they return.
//!
//! - [`canonical`]: RFC 8785 canonical JSON, the bytes every signature covers, and the strict
//!   reader for signed documents;
//! - [`keys`]: Ed25519 keys, ids, the key file's format and signatures;
//! - [`random`]: the generator the host passes in for keys, nonces, tokens and ids;
//! - [`host`]: which hosts a document may name, over [`imurun_core::host`]'s normal form;
//! - [`manifest`]: a pack's manifest, typed and bounded, and the component check;
//! - [`documents`]: signed envelopes and the documents the operator signs (policies, ceilings,
//!   trust roots);
//! - [`trust`]: which key may sign what, rotation, expiry and rollback;
//! - [`decision`]: the one format for everything a person's device decides, and its verifier;
//! - [`journal`]: the hash chain and its check;
//! - [`journal_detail`]: what each kind of journal entry holds, typed;
//! - [`vault`]: sealing credentials at rest;
//! - [`seal`]: the host key's seal over each stored row it accepted;
//! - [`tokens`]: bearer tokens and enrolment codes, kept only as hashes;
//! - [`proposals`]: what a cell may propose, bounded, and how it is shown;
//! - [`tool_intake`]: reading a cell's `tool.propose`, bounded, and the look-alike check of
//!   tool names;
//! - [`authority`]: a proposed tool's authority diff against its agent, and its manifest
//!   clamped by the person's ceiling;
//! - [`checks`]: each device-signed decision as one check over a snapshot of the state it
//!   depends on, read under the lock that applies it: `check(&snapshot, &decision) ->
//!   Result<plan, RuleError>`.

pub mod authority;
pub mod canonical;
pub mod checks;
pub mod decision;
pub mod documents;
mod error;
pub mod host;
pub mod journal;
pub mod journal_detail;
mod journal_refusal;
pub mod keys;
pub mod manifest;
pub mod proposals;
pub mod random;
pub mod seal;
pub mod tokens;
pub mod tool_intake;
pub mod trust;
pub mod vault;

pub use error::RuleError;
