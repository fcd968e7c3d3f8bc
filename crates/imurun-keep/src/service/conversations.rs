//! A session's conversation, kept for its person: what she sent and the files she handed it,
//! what the agent answered, the errors it met and the network uses decided while it ran. It is
//! stored so that it reads the same after the host restarts, although a cell does not survive
//! one. Only the person's own routes read it; the journal holds its session's id alone.

use serde::Serialize;

use super::sessions::session_user;
use super::{Identity, SessionView, Sessions, append};
use crate::KeepError;
use crate::journal_detail::SessionDetail;

/// The most of one entry's text kept, in bytes; a longer reply is kept cut (its length is
/// kept beside it).
pub const ENTRY_BYTES_KEPT_MAX: usize = 64 << 10;

/// The longest title: the agent's name and the first words of the first message.
pub const TITLE_CHARS_MAX: usize = 60;

/// Network uses a message keeps in its conversation; past it, one entry says how many more.
pub const NETWORK_ENTRIES_PER_MESSAGE_MAX: usize = 16;

/// Why a session that was running ended when its host started again.
pub const HOST_RESTARTED: &str = "host_restarted";

/// One entry of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepConversationEntry))]
pub struct ConversationEntry {
    pub id: i64,
    /// `person` (a message she sent), `file` (the name of a file she handed it), `agent` (one
    /// reply), `error` (what a message met: the agent's error, or a limit that ended the
    /// session) or `network` (a use of the network decided while the message ran).
    pub role: String,
    pub text: String,
    /// The text's length before it was cut to [`ENTRY_BYTES_KEPT_MAX`]; for a file, its size.
    pub bytes: i64,
    pub at_ms: i64,
}

/// A session and its conversation (`GET /v1/sessions/{id}/messages`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepConversation))]
pub struct ConversationView {
    pub session: SessionView,
    /// Oldest first; the newest 500 of the session.
    pub entries: Vec<ConversationEntry>,
}

/// An entry to keep: its role and text, and the size to say for a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    pub(crate) role: &'static str,
    pub(crate) text: String,
    pub(crate) bytes: Option<usize>,
}

impl Kept {
    pub(crate) fn new(role: &'static str, text: String) -> Kept {
        Kept {
            role,
            text,
            bytes: None,
        }
    }
}

impl Sessions<'_> {
    /// One of the calling person's sessions with its conversation.
    pub async fn conversation(
        self,
        caller: &Identity,
        id: &str,
    ) -> Result<ConversationView, KeepError> {
        let session = self.get(caller, id).await?;
        let rows = self.core.store().keep_conversation(id).await?;
        let entries = rows
            .into_iter()
            .map(|row| ConversationEntry {
                id: row.id,
                role: row.role,
                text: row.text,
                bytes: row.bytes,
                at_ms: row.at_ms,
            })
            .collect();
        Ok(ConversationView { session, entries })
    }

    /// Deletes one of the calling person's conversations: the session is stopped if it runs,
    /// its messages and title are deleted, and it leaves her list. The proposals it made and
    /// the tools deployed from them stay (they are hers to decide and revoke); the journal
    /// keeps the session's id.
    pub async fn delete(self, caller: &Identity, id: &str) -> Result<(), KeepError> {
        let user = session_user(caller)?;
        self.get(caller, id).await?;
        self.stop(caller, id).await?;
        let mut tx = self.core.store().keep_begin().await?;
        if tx.delete_conversation(id, self.core.now_ms()).await? {
            let subject = format!("session:{id}");
            append(
                &mut tx,
                caller,
                Some(user),
                &subject,
                SessionDetail::Delete {},
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Ends, as [`HOST_RESTARTED`], every session this host left running when it stopped (a
    /// cell does not survive a restart); how many. Each end is journaled.
    pub async fn end_left_running(self) -> Result<usize, KeepError> {
        let host = self.keep.host_id().to_owned();
        let all = self.core.store().backend() == imurun_store::Backend::Sqlite;
        let mut tx = self.core.store().keep_begin().await?;
        let mut ended = 0;
        // A page at a time, until none is left: however many a host left.
        loop {
            let left = tx.sessions_left_running(&host, all).await?;
            if left.is_empty() {
                break;
            }
            let now = super::sessions::end_rows(
                &mut tx,
                &left,
                (
                    HOST_RESTARTED,
                    "the host restarted: a cell does not survive a restart",
                ),
            )
            .await?;
            if now == 0 {
                break;
            }
            ended += now;
        }
        tx.commit().await?;
        Ok(ended)
    }

    /// Keeps `entries` in session `id`'s conversation.
    pub(crate) async fn keep_entries(self, id: &str, entries: &[Kept]) -> Result<(), KeepError> {
        if entries.is_empty() {
            return Ok(());
        }
        let at_ms = self.core.now_ms();
        let cut: Vec<(String, i64)> = entries
            .iter()
            .map(|entry| {
                let bytes = entry.bytes.unwrap_or(entry.text.len());
                (
                    cut_bytes(&entry.text, ENTRY_BYTES_KEPT_MAX).to_owned(),
                    i64::try_from(bytes).unwrap_or(i64::MAX),
                )
            })
            .collect();
        let rows: Vec<_> = entries
            .iter()
            .zip(&cut)
            .map(|(entry, (text, bytes))| imurun_store::NewMessage {
                role: entry.role,
                text,
                bytes: *bytes,
                at_ms,
            })
            .collect();
        self.core.store().keep_conversation_add(id, &rows).await?;
        Ok(())
    }

    /// Gives session `id` its title from its first message, unless it has one.
    pub(crate) async fn entitle(self, id: &str, agent: &str, text: &str) -> Result<(), KeepError> {
        let title = title(agent, text);
        self.core.store().keep_session_entitle(id, &title).await?;
        Ok(())
    }

    /// Forgets the conversations of `user`'s sessions past the newest ones kept.
    pub(crate) async fn trim(self, user: &str) -> Result<(), KeepError> {
        self.core.store().keep_conversations_trim(user).await?;
        Ok(())
    }
}

/// The title of a session of `agent` whose first message is `text`: the agent's name and the
/// message's first words, at most [`TITLE_CHARS_MAX`] characters.
pub(crate) fn title(agent: &str, text: &str) -> String {
    let mut title = format!("{agent}: ");
    let budget = TITLE_CHARS_MAX.saturating_sub(title.chars().count());
    let mut used = 0;
    let words = text
        .split(|c: char| {
            c.is_whitespace() || c.is_control() || crate::manifest::is_hidden_control(c)
        })
        .filter(|word| !word.is_empty());
    for (n, word) in words.enumerate() {
        let length = word.chars().count() + usize::from(n > 0);
        if used + length > budget {
            if n == 0 {
                title.extend(word.chars().take(budget.saturating_sub(1)));
            }
            title.push('…');
            return title;
        }
        if n > 0 {
            title.push(' ');
        }
        title.push_str(word);
        used += length;
    }
    if used == 0 {
        title.truncate(title.trim_end_matches([':', ' ']).len());
    }
    title
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::{TITLE_CHARS_MAX, cut_bytes, title};

    #[test]
    fn a_title_is_the_agent_and_the_first_words_that_fit() {
        assert_eq!(
            title("helper", "Plan my  move\nto Lyon"),
            "helper: Plan my move to Lyon"
        );
        let long = title("helper", &"word ".repeat(40));
        assert!(
            long.ends_with('…') && long.chars().count() <= TITLE_CHARS_MAX,
            "{long}"
        );
        let words = long.trim_start_matches("helper: ").trim_end_matches('…');
        assert!(
            words.split(' ').all(|word| word == "word"),
            "a word is never cut: {long}"
        );
        let one = title("helper", &"x".repeat(200));
        assert_eq!(one.chars().count(), TITLE_CHARS_MAX, "{one}");
        // Control and bidi characters never reach a title.
        assert_eq!(title("helper", "a\u{202e}b\u{7}c"), "helper: a b c");
        assert_eq!(title("helper", "  \n"), "helper");
    }

    #[test]
    fn text_is_cut_at_a_character_boundary() {
        assert_eq!(cut_bytes("héllo", 2), "h");
        assert_eq!(cut_bytes("héllo", 3), "hé");
        assert_eq!(cut_bytes("abc", 9), "abc");
    }
}
