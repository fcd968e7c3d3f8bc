-- The audit log: one row per tool decision and outcome (seed 000, section 4, "Audit").
--
-- There is deliberately no column for argument values: commands, file bodies and URLs may hold
-- secrets, so they never reach the audit.
--
-- Types are chosen to mean the same in PostgreSQL (BIGINT, TEXT). The one SQLite-only line is
-- the id: PostgreSQL spells it `id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY`.
-- AUTOINCREMENT (rather than a plain rowid alias) because an audit id must never be reused, even
-- if rows are ever pruned: a reader paging by id must not see a new row under an old id.
--
-- A migration that has run is never edited (sqlx checks its checksum): change the schema in a
-- new file.
CREATE TABLE audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    -- Milliseconds since the Unix epoch.
    at_ms BIGINT NOT NULL,
    -- The guardrail that produced the row; tool calls are G3-tool.
    mark TEXT NOT NULL,
    tool TEXT NOT NULL,
    -- model, user or agent:N.
    source TEXT NOT NULL CHECK (source IN ('model', 'user') OR source LIKE 'agent:%'),
    decision TEXT NOT NULL CHECK (decision IN ('allow', 'ask', 'deny')),
    -- ok, failed, denied: <reason>, unknown tool, ...
    outcome TEXT NOT NULL,
    session_id TEXT
);

-- The API will list a session's audit rows.
CREATE INDEX audit_session_id ON audit (session_id, id);
