//! The audit table: one row per tool decision and outcome, never argument values.
//!
//! The SQL here is written to run unchanged on PostgreSQL: `$n` placeholders, `BIGINT` and
//! `TEXT` values, and a derived table with an alias for "the last n rows in order".

use std::sync::LazyLock;

use imurun_core::{AuditRecord, CallSource, Decision};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;
use sqlx::{Connection, Row};

use crate::bounds::without_nul;
use crate::{Store, StoreError};

/// Most rows [`Store::recent_audit`] returns in one call, so that no caller can pull the whole
/// log into memory at once.
pub const AUDIT_READ_ROWS_MAX: u32 = 10_000;

/// One stored audit row: an [`AuditRecord`] plus the id the database gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    /// Increases with every row and is never reused, so it orders rows by commit.
    pub id: i64,
    /// Milliseconds since the Unix epoch, as the recorder stamped it.
    pub at_ms: i64,
    /// The guardrail that produced the row; tool calls are `G3-tool`.
    pub mark: String,
    pub tool: String,
    pub source: CallSource,
    pub decision: Decision,
    /// What happened: `ok`, `failed`, `denied: <reason>`, ...
    pub outcome: String,
    pub session_id: Option<String>,
}

/// Most rows one `INSERT` statement carries (7 parameters each; SQLite allows 32 766 and
/// PostgreSQL 65 535 per statement). Sending rows in multi-row statements rather than one
/// statement per row cuts the round trips to SQLite's thread, which dominate a batch's cost.
const INSERT_ROWS_MAX: usize = 32;

/// `INSERT_STATEMENTS[n - 1]` inserts `n` rows. Built once, from constants only, and kept for the
/// life of the process, so the connection's statement cache prepares each of them once.
static INSERT_STATEMENTS: LazyLock<Vec<String>> =
    LazyLock::new(|| (1..=INSERT_ROWS_MAX).map(insert_statement).collect());

fn insert_statement(rows: usize) -> String {
    const COLUMNS: usize = 7;
    let tuples: Vec<String> = (0..rows)
        .map(|row| {
            let placeholders: Vec<String> = (1..=COLUMNS)
                .map(|column| format!("${}", row * COLUMNS + column))
                .collect();
            format!("({})", placeholders.join(", "))
        })
        .collect();
    format!(
        "INSERT INTO audit (at_ms, mark, tool, source, decision, outcome, session_id) VALUES {}",
        tuples.join(", ")
    )
}

const RECENT_AUDIT: &str = "SELECT id, at_ms, mark, tool, source, decision, outcome, session_id \
     FROM (SELECT id, at_ms, mark, tool, source, decision, outcome, session_id \
           FROM audit ORDER BY id DESC LIMIT $1) AS recent \
     ORDER BY id";

const COUNT_AUDIT: &str = "SELECT COUNT(*) FROM audit";

impl Store {
    /// The last `limit` audit rows (at most [`AUDIT_READ_ROWS_MAX`]), oldest first.
    pub async fn recent_audit(&self, limit: u32) -> Result<Vec<AuditRow>, StoreError> {
        let limit = i64::from(limit.min(AUDIT_READ_ROWS_MAX));
        let rows = sqlx::query(RECENT_AUDIT)
            .bind(limit)
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(decode_row).collect()
    }

    /// How many audit rows are committed.
    pub async fn audit_count(&self) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(COUNT_AUDIT)
            .fetch_one(self.pool())
            .await?;
        // COUNT(*) is never negative; a negative value could only come from a broken driver.
        u64::try_from(count).map_err(|_| StoreError::Decode {
            column: "COUNT(*)",
            value: count.to_string(),
        })
    }
}

/// Inserts `records` in one transaction: all of them are committed, or none.
pub(crate) async fn insert_audit_batch(
    connection: &mut AnyConnection,
    records: &[AuditRecord],
) -> Result<(), sqlx::Error> {
    let mut transaction = connection.begin().await?;
    for chunk in records.chunks(INSERT_ROWS_MAX) {
        let Some(statement) = INSERT_STATEMENTS.get(chunk.len() - 1) else {
            // `chunks` never yields an empty chunk or one longer than INSERT_ROWS_MAX.
            unreachable!("a chunk of {} rows", chunk.len());
        };
        let mut query = sqlx::query(statement.as_str());
        for record in chunk {
            query = query
                .bind(record.at_ms)
                .bind(record.mark)
                // The audit keeps every row: a NUL (which PostgreSQL's text cannot hold)
                // becomes U+FFFD instead of costing the row.
                .bind(without_nul(&record.tool).into_owned())
                .bind(record.source.to_string())
                .bind(record.decision.as_str())
                .bind(without_nul(&record.outcome).into_owned())
                .bind(
                    record
                        .session_id
                        .as_deref()
                        .map(|id| without_nul(id).into_owned()),
                );
        }
        query.execute(&mut *transaction).await?;
    }
    transaction.commit().await
}

fn decode_row(row: &AnyRow) -> Result<AuditRow, StoreError> {
    let source: String = row.try_get("source")?;
    let decision: String = row.try_get("decision")?;
    Ok(AuditRow {
        id: row.try_get("id")?,
        at_ms: row.try_get("at_ms")?,
        mark: row.try_get("mark")?,
        tool: row.try_get("tool")?,
        source: parse_source(&source).ok_or(StoreError::Decode {
            column: "source",
            value: source,
        })?,
        decision: parse_decision(&decision).ok_or(StoreError::Decode {
            column: "decision",
            value: decision,
        })?,
        outcome: row.try_get("outcome")?,
        session_id: row.try_get("session_id")?,
    })
}

/// The inverse of `CallSource`'s `Display`: `model`, `user`, `agent:N`.
fn parse_source(text: &str) -> Option<CallSource> {
    match text {
        "model" => Some(CallSource::Model),
        "user" => Some(CallSource::User),
        "prefetch" => Some(CallSource::Prefetch),
        _ => {
            let depth = text.strip_prefix("agent:")?;
            // `u8::from_str` accepts a leading `+`; Display never writes one, so refuse it.
            if !depth.bytes().all(|byte| byte.is_ascii_digit()) {
                return None;
            }
            depth.parse().ok().map(CallSource::Agent)
        }
    }
}

/// The inverse of `Decision::as_str`.
fn parse_decision(text: &str) -> Option<Decision> {
    [Decision::Allow, Decision::Ask, Decision::Deny]
        .into_iter()
        .find(|decision| decision.as_str() == text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_source(text: &str, expected: Option<CallSource>) {
        assert_eq!(parse_source(text), expected, "source {text:?}");
        if let Some(source) = expected {
            assert_eq!(source.to_string(), text, "Display and parse disagree");
        }
    }

    #[test]
    fn sources_read_back_as_written() {
        let cases = [
            ("model", Some(CallSource::Model)),
            ("user", Some(CallSource::User)),
            ("prefetch", Some(CallSource::Prefetch)),
            ("agent:1", Some(CallSource::Agent(1))),
            ("agent:2", Some(CallSource::Agent(2))),
            ("agent:255", Some(CallSource::Agent(255))),
            ("agent:256", None),
            ("agent:", None),
            ("agent:+1", None),
            ("agent:-1", None),
            ("Model", None),
            ("", None),
        ];
        for (text, expected) in cases {
            check_source(text, expected);
        }
    }

    #[test]
    fn insert_statements_number_their_placeholders_row_after_row() {
        let cases = [
            (1, "VALUES ($1, $2, $3, $4, $5, $6, $7)"),
            (
                2,
                "VALUES ($1, $2, $3, $4, $5, $6, $7), ($8, $9, $10, $11, $12, $13, $14)",
            ),
        ];
        for (rows, values) in cases {
            let statement = &INSERT_STATEMENTS[rows - 1];
            assert!(statement.ends_with(values), "{rows} rows: {statement}");
        }
        assert_eq!(INSERT_STATEMENTS.len(), INSERT_ROWS_MAX);
        let last = INSERT_STATEMENTS.last().expect("statements");
        assert!(last.ends_with("$224)"), "{last}");
    }

    #[test]
    fn decisions_read_back_as_written() {
        let cases = [
            ("allow", Some(Decision::Allow)),
            ("ask", Some(Decision::Ask)),
            ("deny", Some(Decision::Deny)),
            ("Allow", None),
            ("", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_decision(text), expected, "decision {text:?}");
        }
    }
}
