//! The high-water marks kept outside the database, in the Keep folder (`high-water.json`,
//! `0600`): the highest version accepted per kind of document and subject. The database keeps
//! the same marks; the host uses the higher of the two. So restoring an old copy of the whole
//! database (its marks included) does not bring an old trust root, ceiling or agent back while
//! this file is there, and losing the file loses nothing while the database is intact.
//!
//! A mark is raised by reading the file, raising the mark and writing the file again through a
//! temporary file and a rename, so a crash leaves the old file or the new one, never half of
//! one. The read and the write hold a lock: a mutex for the writers of one process (a host
//! serves many requests at once, and a mark raised after its transaction commits is outside
//! the database's write lock) and an exclusive lock on `high-water.json.lock` for other
//! processes on the same Keep folder (the command line beside a running host). No raise is
//! lost to another.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::KeepError;

/// The file's name in the Keep folder.
pub const HIGH_WATER_FILE: &str = "high-water.json";

/// Serialises the raises of this process (the file lock is per open file, and a process may
/// hold several `HighWaterFile`s for one folder).
static RAISING: Mutex<()> = Mutex::new(());

/// How long a raise waits for another process's lock on the file.
const LOCK_WAIT_MAX: Duration = Duration::from_secs(5);

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
        // Marks only rise: one high enough already needs no lock (nor a writable folder).
        if self.get(kind, subject)? >= version {
            return Ok(());
        }
        // A writer that panicked left nothing half done (the rename is the only change).
        let _raising = RAISING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let lock = self.lock_file()?;
        self.lock_within(&lock, LOCK_WAIT_MAX)?;
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
        crate::key_files::write_private_file(&temporary, &text)?;
        std::fs::rename(&temporary, &self.path).map_err(|error| self.error(error.to_string()))
    }

    /// Takes the exclusive lock on `lock`, waiting at most `wait`: another process that holds
    /// it longer (stopped, or stuck) makes the write fail, not hang the host.
    fn lock_within(&self, lock: &std::fs::File, wait: Duration) -> Result<(), KeepError> {
        let deadline = Instant::now() + wait;
        loop {
            match lock.try_lock() {
                Ok(()) => return Ok(()),
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(KeepError::Unavailable(format!(
                        "{} is locked by another process for over {} s",
                        self.path.display(),
                        wait.as_secs()
                    )));
                }
                Err(std::fs::TryLockError::Error(error)) => {
                    return Err(self.error(format!("locking it: {error}")));
                }
            }
        }
    }

    /// The lock file beside the marks (`0600`, empty), opened for locking.
    fn lock_file(&self) -> Result<std::fs::File, KeepError> {
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        options
            .open(self.path.with_extension("json.lock"))
            .map_err(|error| self.error(format!("opening its lock file: {error}")))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Raises from many threads at once, each through its own `HighWaterFile` of one folder
    /// (as requests of one host are): every mark is in the file afterwards.
    #[test]
    fn raises_at_the_same_time_lose_no_mark() {
        let dir = tempfile::tempdir().expect("dir");
        let threads: Vec<_> = (0..8)
            .map(|thread| {
                let file = HighWaterFile::in_dir(dir.path());
                std::thread::spawn(move || {
                    for version in 1..=25 {
                        file.raise("tool", &format!("alice/t{thread}"), version)
                            .expect("raised");
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("no panic");
        }
        let file = HighWaterFile::in_dir(dir.path());
        for thread in 0..8 {
            assert_eq!(
                file.get("tool", &format!("alice/t{thread}")).expect("read"),
                25
            );
        }
    }
}
