//! `docs/tool-calls.md` lists every alias the code knows, in its target's row, so the
//! reference cannot drift from the tables in the code.

use imurun_calls::{ALIASES, ARGUMENT_ALIASES};

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/tool-calls.md");
    std::fs::read_to_string(path).unwrap()
}

fn check_table(doc: &str, table: &[(&str, &[&str])]) {
    for (target, aliases) in table {
        let row_start = format!("| `{target}` |");
        let row = doc
            .lines()
            .find(|line| line.starts_with(&row_start))
            .unwrap_or_else(|| panic!("docs/tool-calls.md has no row for `{target}`"));
        let listed: Vec<&str> = row[row_start.len()..]
            .trim_end_matches('|')
            .split(',')
            .map(|cell| cell.trim().trim_matches('`'))
            .collect();
        assert_eq!(
            listed, *aliases,
            "the docs row for `{target}` differs from the code"
        );
    }
}

#[test]
fn the_docs_list_every_name_alias() {
    check_table(&doc(), ALIASES);
}

#[test]
fn the_docs_list_every_argument_alias() {
    check_table(&doc(), ARGUMENT_ALIASES);
}
