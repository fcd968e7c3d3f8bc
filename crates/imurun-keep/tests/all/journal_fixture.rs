//! A journal written before journal details were typed (`tests/fixtures/journal-v1.jsonl`, see
//! its README): its chain still verifies, entry for entry, with the rules' verifier, and each
//! entry's detail reads as a `JournalDetail` that writes the same canonical text back.

use std::collections::BTreeSet;

use imurun_keep::canonical::{canonicalize, parse_document};
use imurun_keep::journal::{Head, JournalEntry, verify_chain};
use imurun_keep::journal_detail::{JournalDetail, RefusalDetail};
use serde::Deserialize;

/// The fixture: one entry of every kind the host wrote, exported row by row.
const FIXTURE: &str = include_str!("../fixtures/journal-v1.jsonl");

/// One exported row: the detail is the text stored.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    seq: i64,
    at_ms: i64,
    actor: String,
    user: Option<String>,
    kind: String,
    subject: String,
    detail: String,
    prev_hash: String,
    hash: String,
}

/// The fixture's rows as the host reads them back: each detail read strictly, as
/// `entry_from_row` does.
pub(crate) fn fixture_entries() -> Vec<(JournalEntry, String)> {
    FIXTURE
        .lines()
        .map(|line| {
            let row: Row = serde_json::from_str(line).expect("a row");
            let detail = parse_document(row.detail.as_bytes()).expect("a stored detail");
            let entry = JournalEntry {
                seq: row.seq,
                at_ms: row.at_ms,
                actor: row.actor,
                user: row.user,
                kind: row.kind,
                subject: row.subject,
                detail,
                prev_hash: row.prev_hash,
                hash: row.hash,
            };
            (entry, row.detail)
        })
        .collect()
}

#[test]
fn a_journal_written_before_typed_details_verifies_intact() {
    let rows = fixture_entries();
    assert!(rows.len() > 100, "{}", rows.len());
    for (entry, text) in &rows {
        assert_eq!(
            String::from_utf8(canonicalize(&entry.detail)).unwrap(),
            *text,
            "entry {} was stored canonical",
            entry.seq
        );
    }
    let entries: Vec<JournalEntry> = rows.into_iter().map(|(entry, _)| entry).collect();
    let last = entries.last().expect("entries");
    let head = Head {
        seq: last.seq,
        hash: last.hash.clone(),
    };
    let report = verify_chain(&entries, Some(&head));
    assert_eq!(report.first_bad, None);
    assert_eq!(report.entries, entries.len());
    // The check still finds an edit in it.
    let mut edited = entries.clone();
    edited[10].subject.push('!');
    assert_eq!(
        verify_chain(&edited, Some(&head))
            .first_bad
            .map(|bad| bad.seq),
        Some(11)
    );
}

#[test]
fn every_entry_of_the_old_journal_reads_as_a_typed_detail_and_writes_back_the_same_text() {
    let mut kinds = BTreeSet::new();
    for (entry, text) in fixture_entries() {
        let detail = JournalDetail::read(&entry.kind, &entry.detail)
            .unwrap_or_else(|error| panic!("entry {}: {error}", entry.seq));
        assert_eq!(detail.kind(), entry.kind, "entry {}", entry.seq);
        let written = canonicalize(&detail.to_value().expect("serializes"));
        assert_eq!(
            String::from_utf8(written).unwrap(),
            text,
            "entry {} ({})",
            entry.seq,
            entry.kind
        );
        // Each refusal reads as the shape that wrote it.
        if let JournalDetail::Refusal(refusal) = &detail {
            let shape = match refusal {
                RefusalDetail::Door(_) => "door",
                RefusalDetail::Bound(_) => "bound",
                RefusalDetail::Session(_) => "session",
                RefusalDetail::Refused(_) => "service",
            };
            let written = if entry.detail["rule"] == "journal_bound" {
                "bound"
            } else if entry.detail["action"] == "request" {
                "door"
            } else if entry.detail.get("session").is_some() {
                "session"
            } else {
                "service"
            };
            assert_eq!(shape, written, "entry {}", entry.seq);
        }
        kinds.insert(entry.kind);
    }
    // One entry of every kind the host writes.
    let every = [
        "ceiling",
        "config",
        "deploy",
        "device",
        "egress",
        "enrol_code",
        "host",
        "proposal",
        "refusal",
        "session",
        "token",
        "tool",
        "trust_root",
        "vault",
    ];
    assert_eq!(kinds, every.into_iter().map(str::to_owned).collect());
}
