//! The two dialects' migrations: the same versions under the same names, and the same schema
//! (tables, columns, their types, nullability and keys, indexes) once run.

use std::collections::BTreeSet;
use std::path::Path;

use sqlx::Row;

/// `(version, description)` of each migration in `migrations/<dialect>/`.
fn migrations(dialect: &str) -> Vec<(i64, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(dialect);
    let mut found: Vec<(i64, String)> = std::fs::read_dir(&dir)
        .expect("the migrations folder")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .into_string()
                .expect("UTF-8")
        })
        .filter_map(|name| {
            let stem = name.strip_suffix(".sql")?;
            let (version, description) = stem.split_once('_')?;
            Some((
                version.parse().expect("a numeric version"),
                description.to_owned(),
            ))
        })
        .collect();
    found.sort();
    found
}

#[test]
fn both_dialects_have_the_same_migrations() {
    let sqlite = migrations("sqlite");
    assert!(sqlite.len() >= 6, "{sqlite:?}");
    assert_eq!(migrations("postgres"), sqlite);
}

/// One column as both engines can describe it: table, name, a type class, NOT NULL, and its
/// place in the primary key (0 when not in it).
type Column = (String, String, &'static str, bool, i64);

fn type_class(declared: &str) -> &'static str {
    match declared.to_ascii_lowercase().as_str() {
        "integer" | "bigint" => "integer",
        "text" => "text",
        "blob" | "bytea" => "bytes",
        other => panic!("a column type the schema check does not know: {other}"),
    }
}

async fn sqlite_schema() -> (BTreeSet<Column>, BTreeSet<String>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = imurun_store::Store::open(dir.path().join("imurun.db"))
        .await
        .expect("open SQLite");
    let raw = crate::support::TestStore::sqlite_url(&dir.path().join("imurun.db"));
    let mut connection = raw_connection(&raw).await;
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx_%'",
    )
    .fetch_all(&mut connection)
    .await
    .expect("tables");
    let mut columns = BTreeSet::new();
    for table in &tables {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT name, type, \"notnull\", pk FROM pragma_table_info('{table}')"
        )))
        .fetch_all(&mut connection)
        .await
        .expect("columns");
        for row in rows {
            let name: String = row.get(0);
            let declared: String = row.get(1);
            let not_null: i64 = row.get(2);
            let key: i64 = row.get(3);
            // SQLite's INTEGER PRIMARY KEY is NOT NULL without saying so.
            columns.insert((
                table.clone(),
                name,
                type_class(&declared),
                not_null == 1 || key > 0,
                key,
            ));
        }
    }
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'",
    )
    .fetch_all(&mut connection)
    .await
    .expect("indexes");
    store.close().await;
    (columns, indexes.into_iter().collect())
}

async fn postgres_schema(url: &str) -> (BTreeSet<Column>, BTreeSet<String>) {
    let mut connection = raw_connection(url).await;
    let rows = sqlx::query(
        "SELECT c.table_name::text, c.column_name::text, c.data_type::text, \
         CASE WHEN c.is_nullable = 'NO' THEN 1 ELSE 0 END::bigint, \
         COALESCE((SELECT k.ordinal_position FROM information_schema.key_column_usage k \
           JOIN information_schema.table_constraints t \
             ON t.constraint_name = k.constraint_name AND t.table_name = k.table_name \
           WHERE t.constraint_type = 'PRIMARY KEY' AND k.table_name = c.table_name \
             AND k.column_name = c.column_name), 0)::bigint \
         FROM information_schema.columns c \
         WHERE c.table_schema = 'public' AND c.table_name NOT LIKE '\\_sqlx\\_%'",
    )
    .fetch_all(&mut connection)
    .await
    .expect("columns");
    let columns = rows
        .into_iter()
        .map(|row| {
            let not_null: i64 = row.get(3);
            (
                row.get::<String, _>(0),
                row.get::<String, _>(1),
                type_class(&row.get::<String, _>(2)),
                not_null == 1,
                row.get::<i64, _>(4),
            )
        })
        .collect();
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'public' \
         AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key' \
         AND tablename NOT LIKE '\\_sqlx\\_%'",
    )
    .fetch_all(&mut connection)
    .await
    .expect("indexes");
    (columns, indexes.into_iter().collect())
}

async fn raw_connection(url: &str) -> sqlx::AnyConnection {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    sqlx::AnyConnection::connect(url).await.expect("connect")
}

/// Every table and column, with its type class, nullability and primary-key place, and every
/// index the migrations make, are the same on both engines.
#[tokio::test]
async fn both_dialects_build_the_same_schema() {
    let postgres = crate::support::fresh().await;
    let (sqlite_columns, sqlite_indexes) = sqlite_schema().await;
    let (postgres_columns, postgres_indexes) = postgres_schema(postgres.url()).await;
    assert!(sqlite_columns.len() > 50, "{sqlite_columns:?}");
    let only_sqlite: Vec<_> = sqlite_columns.difference(&postgres_columns).collect();
    let only_postgres: Vec<_> = postgres_columns.difference(&sqlite_columns).collect();
    assert!(
        only_sqlite.is_empty() && only_postgres.is_empty(),
        "only in SQLite: {only_sqlite:#?}\nonly in PostgreSQL: {only_postgres:#?}"
    );
    // SQLite names the indexes its UNIQUE constraints make `sqlite_autoindex_*` (left out
    // above), PostgreSQL `*_key`: the named ones are compared.
    assert_eq!(postgres_indexes, sqlite_indexes);
}

/// Two hosts started at once on a new database: one migrates it, the other waits for the
/// migration's lock and finds it done. Neither fails, and each migration ran once.
#[tokio::test]
async fn two_hosts_migrating_one_new_database_at_once_both_open_it() {
    let database = imurun_testkit::TestDatabase::create();
    let (first, second) = tokio::join!(
        imurun_store::Store::open_url(database.url()),
        imurun_store::Store::open_url(database.url())
    );
    first.expect("the first host opens it");
    second.expect("the second host opens it");
    let applied = database.sql("SELECT COUNT(*) FROM _sqlx_migrations WHERE success");
    assert_eq!(
        applied,
        migrations("postgres").len().to_string(),
        "each migration once"
    );
}

/// A URL the store does not run on is refused by name, with the password left out.
#[tokio::test]
async fn an_unsupported_url_is_refused_without_its_password() {
    let refused = imurun_store::Store::open_url("mysql://admin:hunter2@db.example/imurun").await;
    let error = refused.expect_err("refused").to_string();
    assert!(error.contains("\"mysql:...\""), "{error}");
    assert!(!error.contains("hunter2"), "{error}");
    // A keyword string (libpq's `host=... password=...`) is not shown at all.
    let refused = imurun_store::Store::open_url("host=db password=hunter2").await;
    let error = refused.expect_err("refused").to_string();
    assert!(!error.contains("hunter2"), "{error}");
}

/// A server that is not there: the store says which database it could not reach (without the
/// password) and calls the error "unavailable", the kind a host answers with "try again".
#[tokio::test]
async fn an_unreachable_server_is_an_unavailable_error_naming_the_database() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let url = format!("postgres://imurun:secret@127.0.0.1:{port}/imurun");
    let error = imurun_store::Store::open_url(&url)
        .await
        .expect_err("nothing listens there");
    assert!(error.is_unavailable(), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains(&format!("127.0.0.1:{port}/imurun")),
        "{message}"
    );
    assert!(!message.contains("secret"), "{message}");
}
