//! Keep's journal under `/v1/journal`: the newest entries, one entry, and the check of the whole
//! hash chain. The operator reads every entry; a person the entries about them.

use axum::Json;
use axum::extract::Path;

use crate::error::ApiError;
use crate::keep_auth::KeepCaller;
use crate::keep_wire::{JournalCheck, JournalEntryInfo, JournalList};
use crate::openapi::ErrorBody;

/// `GET /v1/journal`.
#[utoipa::path(get, path = "/v1/journal", tag = "keep", operation_id = "keep_journal",
    summary = "The newest 1000 journal entries, newest first: all of them for the operator, those about them for a user",
    responses((status = 200, description = "The entries.", body = JournalList),
        (status = 401, description = "No valid Keep token; `unauthorized`.", body = ErrorBody),
        (status = 404, description = "The server is not in Keep mode (`imurun serve --keep`); `keep_off`.", body = ErrorBody),
    ))]
pub(crate) async fn list(caller: KeepCaller) -> Result<Json<JournalList>, ApiError> {
    let entries = caller.keep.journal().list(&caller.identity).await?;
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
