//! `docs/permissions.md` cannot drift from the code: its mode table is compared cell by cell
//! with `mode_table()`, and its hard-denial table with `Rule::HARD_DENIALS`.

use imurun_policy::{Mode, Rule, mode_table};

fn permissions_md() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/permissions.md");
    std::fs::read_to_string(path).unwrap()
}

/// The rows of the first markdown table whose header starts with `| first_header |`,
/// header row included, separator row left out, cells trimmed.
fn table(markdown: &str, first_header: &str) -> Vec<Vec<String>> {
    let start = format!("| {first_header} |");
    let lines = markdown
        .lines()
        .skip_while(|line| !line.starts_with(&start));
    lines
        .take_while(|line| line.starts_with('|'))
        .filter(|line| !line.starts_with("| ---"))
        .map(|line| {
            line.trim()
                .trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn the_mode_table_in_the_docs_is_the_code_table() {
    let rows = table(&permissions_md(), "category");
    let mut expect = vec![
        std::iter::once("category")
            .chain(Mode::ALL.iter().map(|m| m.as_str()))
            .map(String::from)
            .collect::<Vec<_>>(),
    ];
    for (category, decisions) in mode_table() {
        expect.push(
            std::iter::once(category.as_str())
                .chain(decisions.iter().map(|d| d.as_str()))
                .map(String::from)
                .collect(),
        );
    }
    assert_eq!(rows, expect);
}

#[test]
fn every_hard_denial_is_documented_in_order() {
    let rows = table(&permissions_md(), "rule");
    let documented: Vec<String> = rows
        .iter()
        .skip(1)
        .map(|row| row[0].trim_matches('`').to_string())
        .collect();
    let code: Vec<String> = Rule::HARD_DENIALS
        .iter()
        .map(|rule| rule.as_str().to_string())
        .collect();
    assert_eq!(documented, code);
    assert!(
        rows.iter()
            .skip(1)
            .all(|row| row.len() == 2 && !row[1].is_empty())
    );
}
