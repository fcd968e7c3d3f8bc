-- Sessions, their transcripts, their turn views, and the settings (seed 000, the HTTP server).
--
-- Times are milliseconds since the Unix epoch in BIGINT columns, as in the audit table: one
-- integer type that PostgreSQL and SQLite read the same way, and that sorts without parsing.
-- JSON values (a turn's view, a setting's value) are TEXT, written and read by serde_json, so the
-- column means the same in both dialects; PostgreSQL could move them to JSONB in its own DDL.
-- Every line below is valid PostgreSQL as written.
--
-- A migration that has run is never edited (sqlx checks its checksum): change the schema in a
-- new file.

CREATE TABLE sessions (
    -- Caller-supplied or generated; ASCII letters, digits, '.', '_' and '-' only.
    id TEXT PRIMARY KEY,
    -- NULL until the session is named.
    title TEXT,
    created_at_ms BIGINT NOT NULL,
    -- Moved forward by a rename, an appended message and a new turn.
    updated_at_ms BIGINT NOT NULL
);

-- The session list, newest updated first.
CREATE INDEX sessions_by_updated ON sessions (updated_at_ms, created_at_ms, id);

-- The transcript: the prompts delivered to the agent and its final answers, nothing in between.
CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    -- 1, 2, 3, ... within the session, given by the store; never reused while the session lives.
    seq BIGINT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- One row per turn: what the UI shows of it (steps, tool calls, skills) as one JSON document.
CREATE TABLE turns (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id TEXT NOT NULL,
    prompt TEXT NOT NULL,
    -- running, done, stopped, error, interrupted. No CHECK: a new status should not need a
    -- migration (SQLite cannot alter a CHECK); the store refuses what it cannot read.
    status TEXT NOT NULL,
    started_at_ms BIGINT NOT NULL,
    -- NULL while the turn runs.
    ended_at_ms BIGINT,
    -- JSON text.
    view TEXT NOT NULL,
    PRIMARY KEY (session_id, turn_id)
);

-- A session's turns in order.
CREATE INDEX turns_by_started ON turns (session_id, started_at_ms, turn_id);
-- Finding the turns a crash left running, at start-up.
CREATE INDEX turns_by_status ON turns (status);

-- User settings: "agent.maxSteps", "permissions.mode", ...
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    -- JSON text.
    value TEXT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);
