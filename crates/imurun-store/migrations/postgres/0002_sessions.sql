-- PostgreSQL's dialect of ../sqlite/0002_sessions.sql: the same tables, columns and constraints, with
-- PostgreSQL's spelling where the dialects differ (see ../README.md). A migration that has run
-- is never edited (sqlx checks its checksum): change the schema in a new file, in both folders.
CREATE TABLE sessions (
    -- Caller-supplied or generated; ASCII letters, digits, '.', '_' and '-' only.
    id TEXT COLLATE "C" PRIMARY KEY,
    -- NULL until the session is named.
    title TEXT COLLATE "C",
    created_at_ms BIGINT NOT NULL,
    -- Moved forward by a rename, an appended message and a new turn.
    updated_at_ms BIGINT NOT NULL
);

-- The session list, newest updated first.
CREATE INDEX sessions_by_updated ON sessions (updated_at_ms, created_at_ms, id);

-- The transcript: the prompts delivered to the agent and its final answers, nothing in between.
CREATE TABLE messages (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    -- 1, 2, 3, ... within the session, given by the store; never reused while the session lives.
    seq BIGINT NOT NULL,
    role TEXT COLLATE "C" NOT NULL CHECK (role IN ('user', 'assistant')),
    content TEXT COLLATE "C" NOT NULL,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- One row per turn: what the UI shows of it (steps, tool calls, skills) as one JSON document.
CREATE TABLE turns (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id TEXT COLLATE "C" NOT NULL,
    prompt TEXT COLLATE "C" NOT NULL,
    -- running, done, stopped, error, interrupted. No CHECK: a new status should not need a
    -- migration (SQLite cannot alter a CHECK); the store refuses what it cannot read.
    status TEXT COLLATE "C" NOT NULL,
    started_at_ms BIGINT NOT NULL,
    -- NULL while the turn runs.
    ended_at_ms BIGINT,
    -- JSON text.
    view TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, turn_id)
);

-- A session's turns in order.
CREATE INDEX turns_by_started ON turns (session_id, started_at_ms, turn_id);
-- Finding the turns a crash left running, at start-up.
CREATE INDEX turns_by_status ON turns (status);

-- User settings: "agent.maxSteps", "permissions.mode", ...
CREATE TABLE settings (
    key TEXT COLLATE "C" PRIMARY KEY,
    -- JSON text.
    value TEXT COLLATE "C" NOT NULL,
    updated_at_ms BIGINT NOT NULL
);
