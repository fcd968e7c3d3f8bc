//! Which checkout the running tests belong to.

use std::path::{Path, PathBuf};

/// The repository whose tests are running: the first ancestor holding `Cargo.lock` and
/// `scripts/` of the `CARGO_MANIFEST_DIR` cargo gives the test process, else of the folder this
/// crate was built in. The process's own variable comes first because a target folder shared
/// by two checkouts can hand one checkout this crate as the other one built it: its compiled-in
/// path would then run the other checkout's scripts and guests.
pub fn repository() -> PathBuf {
    let running = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    running
        .iter()
        .map(PathBuf::as_path)
        .chain([Path::new(env!("CARGO_MANIFEST_DIR"))])
        .find_map(|start| {
            start
                .ancestors()
                .find(|dir| dir.join("Cargo.lock").is_file() && dir.join("scripts").is_dir())
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_is_the_checkout_this_crate_is_in() {
        let found = repository();
        assert!(
            found.join("scripts").join("postgres").is_file(),
            "{found:?}"
        );
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR")).starts_with(&found),
            "{found:?}"
        );
    }
}
