-- PostgreSQL's dialect of ../sqlite/0005_keep_sessions.sql: the same tables, columns and constraints, with
-- PostgreSQL's spelling where the dialects differ (see ../README.md). A migration that has run
-- is never edited (sqlx checks its checksum): change the schema in a new file, in both folders.
CREATE TABLE keep_sessions (
    id TEXT COLLATE "C" PRIMARY KEY,
    user_name TEXT COLLATE "C" NOT NULL,
    agent TEXT COLLATE "C" NOT NULL,
    agent_version BIGINT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    tainted_at_ms BIGINT,
    taint_source TEXT COLLATE "C",
    ended_at_ms BIGINT,
    end_reason TEXT COLLATE "C"
);

CREATE INDEX keep_sessions_by_user ON keep_sessions (user_name, created_at_ms);

-- Memory entries, suggestions, plans and cards a cell handed its person: validated, stored,
-- never acted on. Accepted memory entries are what `memory.read` returns.
CREATE TABLE keep_proposals (
    id TEXT COLLATE "C" PRIMARY KEY,
    user_name TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES keep_sessions (id),
    agent TEXT COLLATE "C" NOT NULL,
    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('memory', 'suggestion', 'plan', 'card')),
    -- The validated payload, as JSON text.
    payload TEXT COLLATE "C" NOT NULL,
    tainted BIGINT NOT NULL CHECK (tainted IN (0, 1)),
    taint_source TEXT COLLATE "C",
    state TEXT COLLATE "C" NOT NULL CHECK (state IN ('pending', 'accepted', 'rejected')),
    created_at_ms BIGINT NOT NULL,
    decided_at_ms BIGINT
);

CREATE INDEX keep_proposals_by_user ON keep_proposals (user_name, kind, state, created_at_ms);
