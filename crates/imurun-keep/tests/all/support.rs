//! A Keep host in a temporary folder, made by `keep init`'s own code, with a clock the test
//! moves.

use imurun_keep::key_files::read_key;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use imurun_keep::documents::{CEILING_TYPE, POLICY_TYPE, Signed};
use imurun_keep::init::{self, POLICY_KEY_FILE, SIGNER_KEY_FILE};
use imurun_keep::keys::{KeyPair, sha256_hex};
use imurun_keep::service::{DeployRequest, Identity, KeepService, TokenRole};
use imurun_keep::trust::sign_bundle;
use imurun_store::Store;
use serde_json::{Value, json};

pub(crate) const START: i64 = 1_800_000_000;

pub(crate) struct Host {
    pub(crate) dir: tempfile::TempDir,
    /// The database's URL: a SQLite file in `dir`, or a PostgreSQL database of its own.
    pub(crate) url: String,
    /// The PostgreSQL database, dropped with the host.
    pub(crate) database: Option<imurun_testkit::TestDatabase>,
    pub(crate) keep: KeepService,
    pub(crate) operator: Identity,
    pub(crate) policy: KeyPair,
    pub(crate) signer: KeyPair,
    pub(crate) now: Arc<AtomicI64>,
}

impl Host {
    pub(crate) async fn new() -> Host {
        let dir = tempfile::tempdir().expect("temp dir");
        let (url, database) = match super::BACKEND {
            imurun_store::Backend::Sqlite => (
                format!("sqlite://{}", dir.path().join("imurun.sqlite").display()),
                None,
            ),
            imurun_store::Backend::Postgres => {
                let database = imurun_testkit::TestDatabase::create();
                (database.url().to_owned(), Some(database))
            }
        };
        let store = Store::open_url(&url).await.expect("store");
        assert_eq!(store.backend(), super::BACKEND);
        let now = Arc::new(AtomicI64::new(START));
        let clock: Arc<dyn imurun_core::Clock> = Arc::new(TestClock(now.clone()));
        let keep_dir = dir.path().join("keep");
        let report = init::initialise(&keep_dir, store.clone(), clock.clone())
            .await
            .expect("init");
        let keep = init::open(&keep_dir, store.clone(), clock)
            .await
            .expect("open");
        let operator = keep
            .tokens()
            .authenticate(&report.operator_token.token)
            .await
            .expect("operator token");
        Host {
            policy: read_key(&keep_dir.join(POLICY_KEY_FILE)).expect("policy key"),
            signer: read_key(&keep_dir.join(SIGNER_KEY_FILE)).expect("signer key"),
            dir,
            url,
            database,
            keep,
            operator,
            now,
        }
    }

    pub(crate) fn advance(&self, seconds: i64) {
        self.now.fetch_add(seconds, Ordering::SeqCst);
    }

    pub(crate) async fn user(&self, name: &str) -> (Identity, String) {
        let token = self
            .keep
            .tokens()
            .create(&self.operator, &TokenRole::User(name.into()))
            .await
            .expect("user token");
        let identity = self
            .keep
            .tokens()
            .authenticate(&token.token)
            .await
            .expect("authenticate");
        (identity, token.token)
    }

    pub(crate) fn bundle(seed: u8) -> Vec<u8> {
        let mut bytes = vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        bytes.extend(std::iter::repeat_n(seed, 64));
        bytes
    }

    pub(crate) fn manifest(name: &str, version: i64) -> Value {
        json!({
            "name": name, "version": version, "description": "A helper.",
            "resources": {"memory_mb": 64, "cpu_ms": 100, "timeout_ms": 1000},
            "approval_timeout_s": 30
        })
    }

    pub(crate) fn policy_for(&self, manifest: &Value, bundle: &[u8], key: &KeyPair) -> Signed {
        let document = json!({
            "type": POLICY_TYPE,
            "agent": manifest["name"],
            "version": manifest["version"],
            "expires_at": START + 86_400,
            "bundle_sha256": sha256_hex(bundle),
            "manifest": manifest,
        });
        Signed::sign(&document, key).expect("sign policy")
    }

    pub(crate) fn deploy_request(&self, manifest: &Value, seed: u8) -> DeployRequest {
        let bundle = Host::bundle(seed);
        DeployRequest {
            bundle_signature: sign_bundle(&bundle, &self.signer),
            policy: self.policy_for(manifest, &bundle, &self.policy),
            bundle,
        }
    }

    pub(crate) fn ceiling(&self, user: &str, version: i64) -> Signed {
        let document = json!({
            "type": CEILING_TYPE, "user": user, "version": version, "expires_at": START + 86_400,
            "egress": [{"scheme": "https", "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/"}],
            "credentials": ["github"], "memory": "read", "model_socket": false,
            "resources": {"memory_mb": 32, "cpu_ms": 500, "timeout_ms": 2000}
        });
        Signed::sign(&document, &self.policy).expect("sign ceiling")
    }

    /// The journal's newest entry.
    pub(crate) async fn last_entry(&self) -> imurun_keep::service::JournalView {
        self.keep
            .journal()
            .list(&self.operator)
            .await
            .expect("journal")
            .into_iter()
            .next()
            .expect("an entry")
    }
}

impl Host {
    /// Enrols `key` for `user` (whose identity is `who`), with `proof` and a proof of
    /// possession made with `key` itself.
    pub(crate) async fn enrol(
        &self,
        who: &Identity,
        key: &KeyPair,
        user: &str,
        proof: imurun_keep::service::EnrolProof,
    ) -> Result<imurun_keep::service::DeviceView, imurun_keep::KeepError> {
        self.keep
            .devices()
            .enrol(
                who,
                &key.public().to_hex(),
                "device",
                &possession(key, user),
                proof,
            )
            .await
    }
}

impl Host {
    /// Retires `target`, one of `user`'s devices (whose identity is `who`), with a
    /// `retire_device` decision `signer` signs now.
    pub(crate) async fn retire(
        &self,
        who: &Identity,
        signer: &KeyPair,
        target: &KeyPair,
        user: &str,
    ) -> Result<imurun_keep::service::DeviceView, imurun_keep::KeepError> {
        let decision = retire_decision(signer, target, user, self.now.load(Ordering::SeqCst));
        self.keep
            .devices()
            .retire(who, &target.key_id(), &decision)
            .await
    }
}

/// A `retire_device` decision for `target`, of `user`'s, signed by `signer` at `now`.
pub(crate) fn retire_decision(signer: &KeyPair, target: &KeyPair, user: &str, now: i64) -> Signed {
    let hashes =
        std::collections::BTreeMap::from([("public_key".to_owned(), target.public().sha256())]);
    let key_id = target.key_id();
    let expected = imurun_keep::decision::Expected {
        kind: imurun_keep::decision::DecisionKind::RetireDevice,
        subject: &key_id,
        hashes: &hashes,
        ceiling_version: 0,
        policy_version: 0,
        user,
    };
    let decision = imurun_keep::decision::Decision::new(
        &imurun_keep::random::OsRandom,
        &expected,
        signer,
        now,
        300,
        false,
    )
    .expect("decision");
    Signed::sign(&decision, signer).expect("sign")
}

/// The new key's proof that it is held, for `user`.
pub(crate) fn possession(key: &KeyPair, user: &str) -> String {
    key.sign(&imurun_keep::service::possession_message(
        user,
        &key.public(),
    ))
}

/// A key as a trust root lists it.
pub(crate) fn listed(
    pair: &KeyPair,
    role: imurun_keep::documents::KeyRole,
    retired: bool,
) -> imurun_keep::documents::TrustedKey {
    imurun_keep::documents::TrustedKey::listing(pair, role, retired)
}

/// A pool on the host's database, to edit rows behind the service's back.
pub(crate) async fn pool(host: &Host) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::AnyPool::connect(&host.url).await.expect("pool")
}

/// Every byte the database keeps, as far as a test can reach it: the SQLite files (the
/// write-ahead log and shared memory included) in the host's folder, or PostgreSQL's dump of
/// the database.
pub(crate) fn database_bytes(host: &Host) -> Vec<(String, Vec<u8>)> {
    if let Some(database) = &host.database {
        return vec![("pg_dump".to_owned(), database.dump())];
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(host.dir.path()).expect("dir") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            files.push((
                path.display().to_string(),
                std::fs::read(&path).expect("read"),
            ));
        }
    }
    files
}

/// A copy of the host's database as it is now (a backup to restore later): its URL, and what
/// keeps it alive. SQLite: `VACUUM INTO` a file beside the database; PostgreSQL: `pg_dump`
/// into a new database.
pub(crate) async fn backup(host: &Host) -> (String, Option<imurun_testkit::TestDatabase>) {
    match &host.database {
        Some(database) => {
            let copy = database.copy();
            (copy.url().to_owned(), Some(copy))
        }
        None => {
            let old = host.dir.path().join("old.sqlite");
            sqlx::query("VACUUM INTO $1")
                .bind(old.display().to_string())
                .execute(&pool(host).await)
                .await
                .expect("backup");
            (format!("sqlite://{}", old.display()), None)
        }
    }
}

/// A clock the test moves: whole seconds since the Unix epoch.
#[derive(Debug)]
pub(super) struct TestClock(pub Arc<AtomicI64>);

impl imurun_core::Clock for TestClock {
    fn now(&self) -> std::time::SystemTime {
        let seconds = u64::try_from(self.0.load(Ordering::SeqCst)).unwrap_or(0);
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds)
    }
}
