//! Keep's journal under `/v1/journal`: the newest entries, one entry, and the check of the whole
//! hash chain. The operator reads every entry; a person the entries about them.

use axum::Json;
use axum::extract::{Path, Query};
use imurun_keep::service::JournalQuery;
use serde::Deserialize;

use crate::error::ApiError;
use crate::keep_auth::KeepCaller;
use crate::keep_wire::{JournalCheck, JournalEntryInfo, JournalList};
use crate::openapi::ErrorBody;

/// The query of `GET /v1/journal`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct JournalParams {
    /// Only entries about this user (a user naming another gets no entry).
    user: Option<String>,
    /// Only entries of this kind: `trust_root`, `deploy`, `ceiling`, `token`, `enrol_code`,
    /// `device`, `vault`, `host`, `config`, `session`, `proposal`, `tool`, `egress` or
    /// `refusal`.
    kind: Option<String>,
    /// Only entries older than this sequence number: the next page.
    before: Option<i64>,
}

/// `GET /v1/journal`.
#[utoipa::path(get, path = "/v1/journal", tag = "keep", operation_id = "keep_journal",
    summary = "The newest 1000 journal entries the query keeps, newest first: all of them for the operator, those about them for a user",
    params(JournalParams),
    responses((status = 200, description = "The entries.", body = JournalList),
        (status = 400, description = "An unknown `kind`, or a query that does not read; `invalid`, `bad_request`.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn list(
    caller: KeepCaller,
    params: Result<Query<JournalParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<JournalList>, ApiError> {
    let Query(params) = params.map_err(|error| ApiError::bad_request(error.body_text()))?;
    let query = JournalQuery {
        user: params.user.filter(|user| !user.is_empty()),
        kind: params.kind.filter(|kind| !kind.is_empty()),
        before_seq: params.before,
    };
    let entries = caller.keep.journal().find(&caller.identity, &query).await?;
    Ok(Json(JournalList {
        entries: entries.into_iter().map(journal_info).collect(),
    }))
}

/// `GET /v1/journal/{seq}`.
#[utoipa::path(get, path = "/v1/journal/{seq}", tag = "keep", operation_id = "keep_journal_entry",
    summary = "One journal entry the caller may read",
    params(("seq" = i64, Path, description = "The entry's sequence number.")),
    responses(
        (status = 200, description = "The entry.", body = JournalEntryInfo),
        (status = 404, description = "An entry about another user reads as one that does not exist; `not_found`; `keep_off` when the server is not in Keep mode.", body = ErrorBody),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
    ))]
pub(crate) async fn entry(
    caller: KeepCaller,
    Path(seq): Path<String>,
) -> Result<Json<JournalEntryInfo>, ApiError> {
    let Ok(seq) = seq.parse::<i64>() else {
        return Err(ApiError::from(imurun_keep::KeepError::NotFound(
            "journal entry",
        )));
    };
    let entry = caller.keep.journal().entry(&caller.identity, seq).await?;
    Ok(Json(journal_info(entry)))
}

/// `GET /v1/journal/verify`.
#[utoipa::path(get, path = "/v1/journal/verify", tag = "keep", operation_id = "keep_verify_journal",
    summary = "Check the whole journal's hash chain: the operator sees the first bad entry; a user the entries about them and the first bad entry only when it is about them",
    responses(
        (status = 200, description = "The whole chain's check. For a user, `entries` counts the entries about them that the check read, and when the first bad entry is about another user `first_bad_seq` is null and `reason` is \"an entry that is not about you breaks the chain\".", body = JournalCheck),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn verify(caller: KeepCaller) -> Result<Json<JournalCheck>, ApiError> {
    let report = caller.keep.journal().verify(&caller.identity).await?;
    Ok(Json(JournalCheck {
        entries: report.entries,
        intact: report.first_bad.is_none(),
        first_bad_seq: report.first_bad.as_ref().and_then(|bad| bad.seq),
        reason: report.first_bad.map(|bad| bad.reason),
    }))
}

fn journal_info(entry: imurun_keep::service::JournalView) -> JournalEntryInfo {
    JournalEntryInfo {
        seq: entry.seq,
        at_ms: entry.at_ms,
        actor: entry.actor,
        user: entry.user,
        kind: entry.kind,
        subject: entry.subject,
        detail: entry.detail,
        prev_hash: entry.prev_hash,
        hash: entry.hash,
    }
}
