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

/// This host's hold on its name among the hosts that share the database; see
/// [`Store::claim_host`]. Let go when dropped (or when its connection is lost).
pub struct HostClaim {
    _holder: tokio::task::JoinHandle<()>,
    release: Option<tokio::sync::oneshot::Sender<()>>,
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

impl Store {
    /// Claims the name `host_id` among the hosts that share this PostgreSQL database, for as
    /// long as the claim lives: a session-level advisory lock on a connection of its own. A
    /// second host with the same name is refused ([`StoreError::HostTaken`]): two hosts with one
    /// name would take each other's events for their own and forget each other's waits.
    /// `None` on SQLite (one host).
    pub async fn claim_host(&self, host_id: &str) -> Result<Option<HostClaim>, StoreError> {
        if self.backend() != Backend::Postgres {
            return Ok(None);
        }
        use sqlx::Connection;
        let mut connection = sqlx::AnyConnection::connect(self.url()).await?;
        let claimed: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock(hashtext($1))")
            .bind(format!("imurun-keep-host:{host_id}"))
            .fetch_one(&mut connection)
            .await?;
        if !claimed {
            let _ = connection.close().await;
            return Err(StoreError::HostTaken {
                host_id: host_id.to_owned(),
            });
        }
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let holder = tokio::spawn(async move {
            let _ = released.await;
            let _ = connection.close().await;
        });
        Ok(Some(HostClaim {
            _holder: holder,
            release: Some(release),
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
