//! PostgreSQL for the tests: a fresh database of its own for each test on the server
//! `scripts/test` starts (its URL in `IMURUN_TEST_POSTGRES`), and a server of a test's own
//! (started with `scripts/postgres`) for tests that stop the database and start it again.
//!
//! Databases are made and dropped with `psql`, so the testkit needs no database driver.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable that names the test server's administrative URL.
pub const TEST_POSTGRES_VAR: &str = "IMURUN_TEST_POSTGRES";

/// The test server's URL. A test that needs PostgreSQL runs in CI; it never skips itself, so
/// without the variable this panics and says how to get one.
pub fn test_postgres_url() -> String {
    match std::env::var(TEST_POSTGRES_VAR) {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "{TEST_POSTGRES_VAR} is not set: this test runs on PostgreSQL. Run the tests with \
             scripts/test, which starts a throwaway server, or start one with \
             `scripts/postgres start DIR` and export {TEST_POSTGRES_VAR}=<the URL it prints>"
        ),
    }
}

/// An empty database of its own on the test server, dropped (with every connection to it) when
/// this is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl TestDatabase {
    /// A new database on the test server (see [`test_postgres_url`]).
    pub fn create() -> TestDatabase {
        TestDatabase::create_on(&test_postgres_url())
    }

    /// A new database on the server whose administrative URL is `admin_url` (a URL that ends
    /// in `/postgres`).
    pub fn create_on(admin_url: &str) -> TestDatabase {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.subsec_nanos());
        let name = format!(
            "imurun_test_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        psql(admin_url, &format!("CREATE DATABASE {name}"));
        let base = admin_url
            .rsplit_once('/')
            .map_or(admin_url, |(base, _)| base);
        TestDatabase {
            admin_url: admin_url.to_owned(),
            url: format!("{base}/{name}"),
            name,
        }
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs `sql` on this database with `psql` and returns what it printed (unaligned, tuples
    /// only): to look at rows or change them behind the store's back.
    pub fn sql(&self, sql: &str) -> String {
        psql(&self.url, sql)
    }
}

impl TestDatabase {
    /// The database's whole content as `pg_dump` writes it (plain SQL): to check that a
    /// secret reached no row.
    pub fn dump(&self) -> Vec<u8> {
        let output = Command::new(program("pg_dump"))
            .args(["--no-owner", "-d", &self.url])
            .output()
            .expect("run pg_dump (Debian's postgresql-client; scripts/setup installs it)");
        assert!(
            output.status.success(),
            "pg_dump failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    }
}

impl TestDatabase {
    /// A new database on the same server holding a copy of this one's content (`pg_dump`
    /// into `psql`): a backup, to restore later.
    pub fn copy(&self) -> TestDatabase {
        let copy = TestDatabase::create_on(&self.admin_url);
        let dump = self.dump();
        let mut restore = Command::new(psql_program())
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", &copy.url])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run psql");
        {
            use std::io::Write;
            let mut stdin = restore.stdin.take().expect("psql's stdin");
            stdin.write_all(&dump).expect("feed the dump to psql");
        }
        let output = restore.wait_with_output().expect("psql ends");
        assert!(
            output.status.success(),
            "restoring the dump failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        copy
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // Best effort: the whole server is deleted when the tests end anyway.
        let _ = Command::new(psql_program())
            .args([
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &self.admin_url,
                "-c",
            ])
            .arg(format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .output();
    }
}

/// A PostgreSQL server of a test's own, in a temporary folder, on a free loopback port: for
/// tests that stop the database under running hosts and start it again. Stopped and deleted
/// when dropped.
#[derive(Debug)]
pub struct PostgresServer {
    dir: PathBuf,
    _parent: tempfile::TempDir,
    admin_url: String,
}

impl PostgresServer {
    /// Makes and starts the server (about a second).
    pub fn start() -> PostgresServer {
        let parent = tempfile::tempdir().expect("a temporary folder for PostgreSQL");
        let dir = parent.path().join("postgres");
        let output = scripts_postgres(&["start", &dir.display().to_string()]);
        let admin_url = String::from_utf8_lossy(&output).trim().to_owned();
        assert!(
            admin_url.starts_with("postgres://"),
            "scripts/postgres start printed {admin_url:?}"
        );
        PostgresServer {
            dir,
            _parent: parent,
            admin_url,
        }
    }

    /// The administrative URL (database `postgres`).
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    /// A new empty database on this server.
    pub fn database(&self) -> TestDatabase {
        TestDatabase::create_on(&self.admin_url)
    }

    /// Stops the server (a fast shutdown: open connections are closed), keeping its data.
    pub fn halt(&self) {
        scripts_postgres(&["halt", &self.dir.display().to_string()]);
    }

    /// Starts a halted server again, on the same port, with the same data.
    pub fn resume(&self) {
        scripts_postgres(&["resume", &self.dir.display().to_string()]);
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let _ = Command::new(scripts_dir().join("postgres"))
            .args(["stop", &self.dir.display().to_string()])
            .output();
    }
}

fn scripts_dir() -> PathBuf {
    crate::repository().join("scripts")
}

/// Runs `scripts/postgres` with `args`; panics with its output when it fails.
fn scripts_postgres(args: &[&str]) -> Vec<u8> {
    let output = Command::new(scripts_dir().join("postgres"))
        .args(args)
        .output()
        .expect("run scripts/postgres");
    assert!(
        output.status.success(),
        "scripts/postgres {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// `psql`.
fn psql_program() -> PathBuf {
    program("psql")
}

/// A PostgreSQL client program: the test server's own when `IMURUN_TEST_POSTGRES_BIN` names
/// its folder, else the one on the path.
fn program(name: &str) -> PathBuf {
    std::env::var_os("IMURUN_TEST_POSTGRES_BIN")
        .map(|dir| PathBuf::from(dir).join(name))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Runs `sql` on `url`; panics with psql's message when it fails.
fn psql(url: &str, sql: &str) -> String {
    let output = Command::new(psql_program())
        .args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            url,
            "-c",
            sql,
        ])
        .output()
        .expect("run psql (Debian's postgresql-client; scripts/setup installs it)");
    assert!(
        output.status.success(),
        "psql failed on {sql:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_owned()
}
