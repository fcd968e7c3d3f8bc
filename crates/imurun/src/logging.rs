//! Logs: every crate writes `tracing` events; the binary sets up the one subscriber, here.
//!
//! Lines go to stderr — human-readable, or JSON lines with `--log-format json` — and, for
//! `imurun serve`, also to `<data folder>/logs/imurun.log` as JSON lines, rotated by size
//! ([`LOG_FILE_BYTES_MAX`], [`LOG_FILES_KEPT`]) so the folder never grows past a known bound.
//! Which lines are written is `IMURUN_LOG` (else `RUST_LOG`), in `tracing`'s filter syntax;
//! without one, `info` for the server and `warn` for the other commands, with llama.cpp's
//! own messages only from `debug` on.
//!
//! Logs follow the audit's privacy rule: no argument values, no secrets, and no prompt text
//! above `debug`. The code only ever logs ids, names, counts and error messages of its own
//! making; a canary test reads the log files to hold it to that.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use anyhow::{Context, Result};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// A log file is rotated once it holds this many bytes.
pub(crate) const LOG_FILE_BYTES_MAX: u64 = 10 << 20;

/// Files kept: `imurun.log` and `imurun.log.1` … `imurun.log.3`; the oldest is dropped.
pub(crate) const LOG_FILES_KEPT: usize = 4;

/// The log file's name in the logs folder.
pub(crate) const LOG_FILE_NAME: &str = "imurun.log";

/// How stderr's lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// One readable line per event (coloured on a terminal).
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// How logging is set up for one command.
#[derive(Debug, Clone)]
pub(crate) struct LogSetup {
    /// `IMURUN_LOG` / `RUST_LOG`, if set.
    pub(crate) filter: Option<String>,
    pub(crate) format: LogFormat,
    /// The folder for log files (`imurun serve` only).
    pub(crate) file_dir: Option<PathBuf>,
    /// The level when no filter is given: `info` for the server, `warn` otherwise.
    pub(crate) default_level: &'static str,
}

/// Installs the subscriber for this process. A filter that does not parse is an error that
/// names it; a log folder that cannot be created is one too.
pub(crate) fn init(setup: &LogSetup) -> Result<()> {
    let directives = match &setup.filter {
        Some(filter) => filter.clone(),
        // llama.cpp talks at `info` about every tensor it loads; that is debugging detail.
        None => format!("{},llama-cpp-2=warn", setup.default_level),
    };
    let filter = EnvFilter::try_new(&directives)
        .with_context(|| format!("IMURUN_LOG `{directives}` is not a log filter"))?;
    let stderr_human = (setup.format == LogFormat::Human).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(io::stderr)
            .with_ansi(io::IsTerminal::is_terminal(&io::stderr()))
            .with_target(false)
    });
    let stderr_json = (setup.format == LogFormat::Json).then(|| {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(io::stderr)
            .with_current_span(true)
            .with_span_list(true)
    });
    let file = match &setup.file_dir {
        Some(dir) => Some(
            tracing_subscriber::fmt::layer()
                .json()
                .with_writer(RotatingFile::open(dir)?)
                .with_current_span(true)
                .with_span_list(true),
        ),
        None => None,
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(stderr_human)
        .with(stderr_json)
        .with(file)
        .try_init()
        .context("setting up logging")?;
    Ok(())
}

/// A log file that moves to `.1` (and `.1` to `.2`, …) once it passes its size bound.
#[derive(Debug)]
pub(crate) struct RotatingFile {
    dir: PathBuf,
    bytes_max: u64,
    kept: usize,
    state: Mutex<Open>,
}

#[derive(Debug)]
struct Open {
    file: File,
    bytes: u64,
}

impl RotatingFile {
    /// Opens (appending) `dir/imurun.log`, creating the folder, with the default bounds.
    pub(crate) fn open(dir: &Path) -> Result<Self> {
        Self::with_bounds(dir, LOG_FILE_BYTES_MAX, LOG_FILES_KEPT)
    }

    pub(crate) fn with_bounds(dir: &Path, bytes_max: u64, kept: usize) -> Result<Self> {
        imurun_store::create_private_dir_all(dir)
            .with_context(|| format!("creating the log folder {}", dir.display()))?;
        let path = dir.join(LOG_FILE_NAME);
        let file = append(&path).with_context(|| format!("opening {}", path.display()))?;
        let bytes = file.metadata().map(|metadata| metadata.len()).unwrap_or(0);
        Ok(Self {
            dir: dir.to_path_buf(),
            bytes_max,
            kept: kept.max(1),
            state: Mutex::new(Open { file, bytes }),
        })
    }

    fn state(&self) -> MutexGuard<'_, Open> {
        // Each write leaves the state whole (a file and its length), so a poisoned lock is safe.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves the files one place up and starts a new one.
    fn rotate(&self, open: &mut Open) -> io::Result<()> {
        let name = |index: usize| match index {
            0 => self.dir.join(LOG_FILE_NAME),
            n => self.dir.join(format!("{LOG_FILE_NAME}.{n}")),
        };
        let _ = fs::remove_file(name(self.kept - 1));
        for index in (0..self.kept - 1).rev() {
            let _ = fs::rename(name(index), name(index + 1));
        }
        open.file = append(&name(0))?;
        open.bytes = 0;
        Ok(())
    }
}

fn append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Logs name sessions and tools: for this user's eyes only.
        options.mode(0o600);
    }
    options.open(path)
}

/// One event's line, written to the current file in one piece.
#[derive(Debug)]
pub(crate) struct LogLine<'a> {
    file: &'a RotatingFile,
}

impl Write for LogLine<'_> {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        let mut open = self.file.state();
        if open.bytes > 0 && open.bytes + buffer.len() as u64 > self.file.bytes_max {
            self.file.rotate(&mut open)?;
        }
        open.file.write_all(buffer)?;
        open.bytes += buffer.len() as u64;
        Ok(buffer.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.state().file.flush()
    }
}

impl<'a> MakeWriter<'a> for RotatingFile {
    type Writer = LogLine<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        LogLine { file: self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_rotate_at_their_bound_and_only_so_many_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = RotatingFile::with_bounds(dir.path(), 100, 3).unwrap();
        for line in 0..20 {
            let mut writer = file.make_writer();
            writer
                .write_all(format!("{line:02} {}\n", "x".repeat(36)).as_bytes())
                .unwrap();
        }
        let mut names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["imurun.log", "imurun.log.1", "imurun.log.2"]);
        for name in &names {
            let size = fs::metadata(dir.path().join(name)).unwrap().len();
            assert!(size <= 100, "{name} holds {size} bytes");
        }
        // The newest line is in the current file, whole.
        let current = fs::read_to_string(dir.path().join("imurun.log")).unwrap();
        assert!(
            current.ends_with(&format!("19 {}\n", "x".repeat(36))),
            "{current}"
        );
    }
}
