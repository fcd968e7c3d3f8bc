-- Keep sessions and what their cells propose.

-- A person's session with an agent, run in a cell. The cell itself lives in the host's memory;
-- this row says whose it is, which agent version it runs, whether it read untrusted content
-- (taint, from the moment it did, and what it was), and how it ended.
CREATE TABLE keep_sessions (
    id TEXT PRIMARY KEY,
    user_name TEXT NOT NULL,
    agent TEXT NOT NULL,
    agent_version BIGINT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    tainted_at_ms BIGINT,
    taint_source TEXT,
    ended_at_ms BIGINT,
    end_reason TEXT
);

CREATE INDEX keep_sessions_by_user ON keep_sessions (user_name, created_at_ms);

-- Memory entries, suggestions, plans and cards a cell handed its person: validated, stored,
-- never acted on. Accepted memory entries are what `memory.read` returns.
CREATE TABLE keep_proposals (
    id TEXT PRIMARY KEY,
    user_name TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES keep_sessions (id),
    agent TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('memory', 'suggestion', 'plan', 'card')),
    -- The validated payload, as JSON text.
    payload TEXT NOT NULL,
    tainted INTEGER NOT NULL CHECK (tainted IN (0, 1)),
    taint_source TEXT,
    state TEXT NOT NULL CHECK (state IN ('pending', 'accepted', 'rejected')),
    created_at_ms BIGINT NOT NULL,
    decided_at_ms BIGINT
);

CREATE INDEX keep_proposals_by_user ON keep_proposals (user_name, kind, state, created_at_ms);
