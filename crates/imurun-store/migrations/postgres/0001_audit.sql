-- PostgreSQL's dialect of ../sqlite/0001_audit.sql: the same tables, columns and constraints, with
-- PostgreSQL's spelling where the dialects differ (see ../README.md). A migration that has run
-- is never edited (sqlx checks its checksum): change the schema in a new file, in both folders.
CREATE TABLE audit (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Milliseconds since the Unix epoch.
    at_ms BIGINT NOT NULL,
    -- The guardrail that produced the row; tool calls are G3-tool.
    mark TEXT COLLATE "C" NOT NULL,
    tool TEXT COLLATE "C" NOT NULL,
    -- model, user or agent:N.
    source TEXT COLLATE "C" NOT NULL CHECK (source IN ('model', 'user') OR source LIKE 'agent:%'),
    decision TEXT COLLATE "C" NOT NULL CHECK (decision IN ('allow', 'ask', 'deny')),
    -- ok, failed, denied: <reason>, unknown tool, ...
    outcome TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C"
);

-- The API will list a session's audit rows.
CREATE INDEX audit_session_id ON audit (session_id, id);
