//! Secret key files: created `0600` (never over an existing file) and refused when others may
//! read them, as `ssh` refuses such a key. The file's format is the rules' own
//! ([`KeyPair::to_file_bytes`]); only the host touches the disk.

use std::io::Write;
use std::path::Path;

use imurun_keep_rules::keys::KeyPair;

use crate::KeepError;

/// Writes `pair` to a new file at `path`, readable and writable by its owner only. An existing
/// file is never replaced: losing a key by typing the wrong path is not undoable.
pub fn write_key(pair: &KeyPair, path: &Path) -> Result<(), KeepError> {
    write_private_file(path, &pair.to_file_bytes())
}

/// Reads a key file written by [`write_key`]. A file that its group or others may read is
/// refused: the key may already be known to someone else.
pub fn read_key(path: &Path) -> Result<KeyPair, KeepError> {
    refuse_shared_file(path)?;
    let bytes = std::fs::read(path).map_err(|source| key_file_error(path, source.to_string()))?;
    KeyPair::from_file_bytes(&bytes).map_err(|reason| key_file_error(path, reason))
}

/// Creates `path` with `bytes`, mode `0600`, failing if it exists.
pub fn write_private_file(path: &Path, bytes: &[u8]) -> Result<(), KeepError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            key_file_error(
                path,
                "it exists already; a key file is never replaced".into(),
            )
        } else {
            key_file_error(path, source.to_string())
        }
    })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|source| key_file_error(path, source.to_string()))
}

/// Refuses a file its group or others may read or write.
pub fn refuse_shared_file(path: &Path) -> Result<(), KeepError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let metadata =
            std::fs::metadata(path).map_err(|source| key_file_error(path, source.to_string()))?;
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(key_file_error(
                path,
                format!(
                    "its mode is {mode:03o}: others may read it; run `chmod 600` on it if it \
                     is still secret"
                ),
            ));
        }
    }
    Ok(())
}

fn key_file_error(path: &Path, reason: String) -> KeepError {
    KeepError::KeyFile {
        path: path.display().to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::OsRandom;

    #[test]
    fn key_files_are_private_and_never_replaced() {
        let folder = tempfile::tempdir().expect("temp dir");
        let path = folder.path().join("key.json");
        let pair = KeyPair::generate(&OsRandom).expect("key");
        write_key(&pair, &path).expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let read = read_key(&path).expect("read");
        assert_eq!(read.key_id(), pair.key_id());
        let again = write_key(&KeyPair::generate(&OsRandom).expect("key"), &path);
        assert!(again.is_err_and(|error| error.to_string().contains("never replaced")));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
            let refused = read_key(&path);
            assert!(refused.is_err_and(|error| error.to_string().contains("644")));
        }
    }
}
