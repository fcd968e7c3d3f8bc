//! PostgreSQL's `LISTEN`/`NOTIFY`, for hosts that share one database: a host says something
//! happened (an event for a person's page, an answer for a use another host's cell waits on),
//! and every host listening hears it. On SQLite there is one host and nothing to tell:
//! [`Store::notify`] does nothing and [`Store::listen`] gives `None`.
//!
//! A notification is a hint, never the state itself: what it names is read from the database,
//! and a listener that lost its connection says so ([`Heard::Missed`]), so that whoever relies
//! on it reloads what it shows.

use std::time::Duration;

use sqlx::postgres::PgListener;

use crate::{Backend, Store, StoreError};

/// The largest payload PostgreSQL carries in one notification is just under 8 000 bytes; a
/// caller keeps below this and sends a smaller notice instead of a larger payload.
pub const NOTIFY_PAYLOAD_BYTES_MAX: usize = 7_000;

/// How long a listener waits before connecting again after losing the database.
const RECONNECT_PAUSE_MS: u64 = 500;

/// What a listener heard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A notification on `channel` with `payload`.
    Notification { channel: String, payload: String },
    /// The connection was lost and made again: notifications sent meanwhile were not heard.
    Missed,
}

/// A connection that listens on some channels; see [`Store::listen`].
pub struct Listener {
    url: String,
    channels: Vec<String>,
    listener: Option<PgListener>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Listener")
            .field("channels", &self.channels)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Tells every host listening on `channel`: `payload` (at most
    /// [`NOTIFY_PAYLOAD_BYTES_MAX`] bytes). Nothing on SQLite.
    pub async fn notify(&self, channel: &str, payload: &str) -> Result<(), StoreError> {
        if self.backend() != Backend::Postgres {
            return Ok(());
        }
        notification(channel, payload)?.execute(self.pool()).await?;
        Ok(())
    }

    /// A listener on `channels`, or `None` on SQLite (one host: nobody else to hear).
    pub async fn listen(&self, channels: &[&str]) -> Result<Option<Listener>, StoreError> {
        if self.backend() != Backend::Postgres {
            return Ok(None);
        }
        let mut listener = Listener {
            url: self.url().to_owned(),
            channels: channels.iter().map(|&channel| channel.to_owned()).collect(),
            listener: None,
        };
        listener.connect().await?;
        Ok(Some(listener))
    }
}

/// How often a host's claim on its name checks its connection, and tries again to take the
/// claim after losing it (the database restarted, failed over, or ended the connection).
const CLAIM_CHECK_EVERY: Duration = Duration::from_secs(1);

/// The advisory lock key of host `host_id`'s claim: a 64-bit hash, so that two names sharing
/// a key is not a practical worry.
pub(crate) const HOST_CLAIM_KEY: &str = "hashtextextended('imurun-keep-host:' || $1, 0)";

/// This host's hold on its name among the hosts that share the database; see
/// [`Store::claim_host`]. Let go when dropped.
pub struct HostClaim {
    _holder: tokio::task::JoinHandle<()>,
    release: Option<tokio::sync::oneshot::Sender<()>>,
    lost: tokio::sync::watch::Receiver<bool>,
}

impl std::fmt::Debug for HostClaim {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("HostClaim").finish_non_exhaustive()
    }
}

impl Drop for HostClaim {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.send(());
        }
    }
}

impl HostClaim {
    /// Resolves if the name was lost for good: while this host's claim was down (its
    /// connection lost), another host took the same name. Pending for as long as the claim
    /// holds or can be taken again.
    pub async fn lost(&mut self) {
        if self.lost.wait_for(|lost| *lost).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// A claim's connection and its server process's id.
struct Held {
    connection: sqlx::AnyConnection,
    backend_pid: i32,
}

/// Takes the claim on `host_id` on a connection of its own: the connection, or `None` when
/// another host holds the name.
async fn take_claim(url: &str, host_id: &str) -> Result<Option<Held>, StoreError> {
    use sqlx::Connection;
    let mut connection = sqlx::AnyConnection::connect(url).await?;
    let backend_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut connection)
        .await?;
    let claimed: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT pg_try_advisory_lock(({}))",
        HOST_CLAIM_KEY
    )))
    .bind(host_id)
    .fetch_one(&mut connection)
    .await?;
    if claimed {
        Ok(Some(Held {
            connection,
            backend_pid,
        }))
    } else {
        let _ = connection.close().await;
        Ok(None)
    }
}

/// How many times in a row the claim is found held by someone else before the name counts
/// as lost: the old connection's server process may still be ending.
const CLAIM_RETRIES: u32 = 5;

/// Holds the claim on `host_id` until `released`: checks its connection every
/// [`CLAIM_CHECK_EVERY`] and, when the connection fails twice running (the lock may be gone
/// with it), closes it and takes the claim again on a new one as soon as the database
/// answers. If another host holds the name [`CLAIM_RETRIES`] times running, says so on `lost`
/// and stops.
async fn hold_claim(
    url: String,
    host_id: String,
    mut held: Held,
    mut released: tokio::sync::oneshot::Receiver<()>,
    lost: tokio::sync::watch::Sender<bool>,
) {
    use sqlx::Connection;
    loop {
        tokio::select! {
            _ = &mut released => {
                let _ = held.connection.close().await;
                return;
            }
            () = tokio::time::sleep(CLAIM_CHECK_EVERY) => {}
        }
        // One failed check may be a cancelled statement on a sound connection: ask again.
        if alive(&mut held.connection).await || alive(&mut held.connection).await {
            continue;
        }
        tracing::warn!(%host_id, "this host's claim on its name was lost with its connection");
        // A connection that still holds the lock lets go of it as it closes.
        let old_pid = held.backend_pid;
        let _ = tokio::time::timeout(CLAIM_CHECK_EVERY, held.connection.close()).await;
        let mut held_elsewhere = 0;
        held = loop {
            tokio::select! {
                _ = &mut released => return,
                () = tokio::time::sleep(CLAIM_CHECK_EVERY) => {}
            }
            let taken = tokio::time::timeout(CLAIM_CHECK_EVERY * 5, take_claim(&url, &host_id))
                .await
                .unwrap_or(Err(StoreError::from(sqlx::Error::PoolTimedOut)));
            match taken {
                Ok(Some(held)) => {
                    tracing::info!(%host_id, "this host's claim on its name is held again");
                    break held;
                }
                // The old connection's server process may still hold it (the connection went
                // silent rather than closed): that one is ended, and the claim taken again.
                Ok(None) if end_own_stale_claim(&url, &host_id, old_pid).await => {}
                Ok(None) => {
                    held_elsewhere += 1;
                    if held_elsewhere >= CLAIM_RETRIES {
                        tracing::error!(
                            %host_id,
                            "another Keep host took this host's name while its claim was down"
                        );
                        let _ = lost.send(true);
                        return;
                    }
                }
                Err(_) => held_elsewhere = 0,
            }
        };
    }
}

/// Ends server process `pid` if it still holds `host_id`'s claim (this host's old claim
/// connection, gone silent): whether it did.
async fn end_own_stale_claim(url: &str, host_id: &str, pid: i32) -> bool {
    use sqlx::Connection;
    let ended = async {
        let mut connection = sqlx::AnyConnection::connect(url).await.ok()?;
        let ended: Option<bool> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT pg_terminate_backend(pid) FROM pg_locks, (SELECT {HOST_CLAIM_KEY} AS key) \
             AS claim WHERE pid = $2 AND locktype = 'advisory' AND granted AND objsubid = 1 \
             AND classid::bigint = ((claim.key >> 32) & 4294967295) \
             AND objid::bigint = (claim.key & 4294967295)"
        )))
        .bind(host_id)
        .bind(pid)
        .fetch_optional(&mut connection)
        .await
        .ok()
        .flatten();
        let _ = connection.close().await;
        ended
    };
    let ended = tokio::time::timeout(CLAIM_CHECK_EVERY * 5, ended)
        .await
        .ok()
        .flatten()
        .unwrap_or(false);
    if ended {
        tracing::warn!(%host_id, pid, "this host's old claim connection was ended");
    }
    ended
}

/// Whether `connection` answers within [`CLAIM_CHECK_EVERY`]: a connection gone silent (a
/// partition, a stalled proxy) counts as lost rather than hold the check forever.
async fn alive(connection: &mut sqlx::AnyConnection) -> bool {
    matches!(
        tokio::time::timeout(
            CLAIM_CHECK_EVERY,
            sqlx::query("SELECT 1").execute(connection)
        )
        .await,
        Ok(Ok(_))
    )
}

impl Store {
    /// Claims the name `host_id` among the hosts that share this PostgreSQL database, for as
    /// long as the claim lives: a session-level advisory lock on a connection of its own,
    /// taken again when that connection is lost (see [`HostClaim::lost`]). A second host with
    /// the same name is refused ([`StoreError::HostTaken`]): two hosts with one name would take
    /// each other's events for their own and forget each other's waits. `None` on SQLite
    /// (one host).
    pub async fn claim_host(&self, host_id: &str) -> Result<Option<HostClaim>, StoreError> {
        if self.backend() != Backend::Postgres {
            return Ok(None);
        }
        let Some(held) = take_claim(self.url(), host_id).await? else {
            return Err(StoreError::HostTaken {
                host_id: host_id.to_owned(),
            });
        };
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let (lost_sender, lost) = tokio::sync::watch::channel(false);
        let holder = tokio::spawn(hold_claim(
            self.url().to_owned(),
            host_id.to_owned(),
            held,
            released,
            lost_sender,
        ));
        Ok(Some(HostClaim {
            _holder: holder,
            release: Some(release),
            lost,
        }))
    }
}

impl crate::KeepTx {
    /// Tells every host listening on `channel`, when (and only if) this transaction commits.
    /// Nothing on SQLite.
    pub async fn notify(&mut self, channel: &str, payload: &str) -> Result<(), StoreError> {
        if self.backend() != Backend::Postgres {
            return Ok(());
        }
        notification(channel, payload)?
            .execute(self.connection())
            .await?;
        Ok(())
    }
}

impl Listener {
    async fn connect(&mut self) -> Result<(), StoreError> {
        let mut listener = PgListener::connect(&self.url).await?;
        listener
            .listen_all(self.channels.iter().map(String::as_str))
            .await?;
        self.listener = Some(listener);
        Ok(())
    }

    /// Lets go of the connection and what it holds unread (a backlog, a flood): the next
    /// [`Listener::next`] connects anew and says [`Heard::Missed`].
    pub fn drop_backlog(&mut self) {
        self.listener = None;
    }

    /// The next thing heard. While the database cannot be reached it keeps trying (every
    /// half second); once it is back, it says [`Heard::Missed`] first. It ends only when
    /// the future is dropped.
    pub async fn next(&mut self) -> Heard {
        if let Some(listener) = &mut self.listener
            && let Ok(Some(notification)) = listener.try_recv().await
        {
            return Heard::Notification {
                channel: notification.channel().to_owned(),
                payload: notification.payload().to_owned(),
            };
        }
        // Lost: whatever was sent meanwhile is gone. Connect anew.
        self.listener = None;
        loop {
            match self.connect().await {
                Ok(()) => return Heard::Missed,
                Err(error) => {
                    tracing::warn!("listening to the database again failed: {error}");
                    tokio::time::sleep(Duration::from_millis(RECONNECT_PAUSE_MS)).await;
                }
            }
        }
    }
}

/// The statement that sends `payload` on `channel`, once the payload's size is checked.
fn notification<'q>(
    channel: &'q str,
    payload: &'q str,
) -> Result<sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>, StoreError> {
    crate::bounds::check_bytes("notification", payload, NOTIFY_PAYLOAD_BYTES_MAX)?;
    Ok(sqlx::query("SELECT pg_notify($1, $2)")
        .bind(channel)
        .bind(payload))
}
