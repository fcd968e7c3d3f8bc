-- A session's conversation, kept for its person so that it reads the same after the host
-- restarts (a cell does not survive one): what the person sent, what the agent answered, the
-- files handed to it, the errors it met and the network uses decided while it ran. Only the
-- person's own routes read these rows; the journal holds ids and hashes, never their text.
--
-- A migration that has run is never edited (sqlx checks its checksum): change the schema in a
-- new file, in both folders.

-- The session's title (its agent's name and the first words of its first message), the host
-- whose cell ran it (ended as `host_restarted` when that host starts again), and when its
-- person deleted the conversation (the row stays, for the proposals and tools that name it).
ALTER TABLE keep_sessions ADD COLUMN title TEXT;
ALTER TABLE keep_sessions ADD COLUMN host_id TEXT;
ALTER TABLE keep_sessions ADD COLUMN deleted_at_ms BIGINT;

CREATE TABLE keep_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES keep_sessions (id),
    role TEXT NOT NULL CHECK (role IN ('person', 'agent', 'file', 'error', 'network')),
    -- The text, cut to the bound kept (`bytes` is its length before the cut).
    text TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    at_ms BIGINT NOT NULL
);

CREATE INDEX keep_messages_by_session ON keep_messages (session_id, id);
