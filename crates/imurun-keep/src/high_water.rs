//! The high-water marks kept outside the database, in the Keep folder (`high-water.json`,
//! `0600`): the highest version accepted per kind of document and subject. The database keeps
//! the same marks; the host uses the higher of the two. So restoring an old copy of the whole
//! database (its marks included) does not bring an old trust root, ceiling or agent back while
//! this file is there, and losing the file loses nothing while the database is intact.
//!
//! The file is written after each accepting transaction commits (under the database's write
//! lock, which serialises Keep's writes on a host), through a temporary file and a rename, so a
//! crash leaves the old file or the new one, never half of one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::KeepError;

/// The file's name in the Keep folder.
pub const HIGH_WATER_FILE: &str = "high-water.json";

/// The marks file of one Keep folder.
#[derive(Debug, Clone)]
pub struct HighWaterFile {
    path: PathBuf,
}

impl HighWaterFile {
    /// The marks file in the Keep folder `dir`.
    pub fn in_dir(dir: &Path) -> HighWaterFile {
        HighWaterFile {
            path: dir.join(HIGH_WATER_FILE),
        }
    }

    /// The mark for `kind` and `subject` (0 when the file or the mark is missing).
    pub fn get(&self, kind: &str, subject: &str) -> Result<i64, KeepError> {
        Ok(self.read()?.get(&key(kind, subject)).copied().unwrap_or(0))
    }

    /// Raises the mark for `kind` and `subject` to `version` (never lowers it).
    pub fn raise(&self, kind: &str, subject: &str, version: i64) -> Result<(), KeepError> {
        let mut marks = self.read()?;
        let mark = marks.entry(key(kind, subject)).or_insert(0);
        if *mark >= version {
            return Ok(());
        }
        *mark = version;
        let text =
            serde_json::to_vec_pretty(&marks).map_err(|error| self.error(error.to_string()))?;
        let temporary = self.path.with_extension("json.tmp");
        let _ = std::fs::remove_file(&temporary);
        crate::keys::write_private_file(&temporary, &text)?;
        std::fs::rename(&temporary, &self.path).map_err(|error| self.error(error.to_string()))
    }

    fn read(&self) -> Result<BTreeMap<String, i64>, KeepError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|error| self.error(format!("it is not a map of marks: {error}"))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(error) => Err(self.error(error.to_string())),
        }
    }

    fn error(&self, reason: String) -> KeepError {
        KeepError::KeyFile {
            path: self.path.display().to_string(),
            reason,
        }
    }
}

fn key(kind: &str, subject: &str) -> String {
    format!("{kind}/{subject}")
}
