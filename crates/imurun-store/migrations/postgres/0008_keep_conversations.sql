-- PostgreSQL's dialect of ../sqlite/0008_keep_conversations.sql: the same tables, columns and
-- constraints, with PostgreSQL's spelling where the dialects differ (see ../README.md). A
-- migration that has run is never edited (sqlx checks its checksum): change the schema in a
-- new file, in both folders.
ALTER TABLE keep_sessions ADD COLUMN title TEXT COLLATE "C";
ALTER TABLE keep_sessions ADD COLUMN host_id TEXT COLLATE "C";
ALTER TABLE keep_sessions ADD COLUMN deleted_at_ms BIGINT;

CREATE TABLE keep_messages (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES keep_sessions (id),
    role TEXT COLLATE "C" NOT NULL CHECK (role IN ('person', 'agent', 'file', 'error', 'network')),
    text TEXT COLLATE "C" NOT NULL,
    bytes BIGINT NOT NULL,
    at_ms BIGINT NOT NULL
);

CREATE INDEX keep_messages_by_session ON keep_messages (session_id, id);
