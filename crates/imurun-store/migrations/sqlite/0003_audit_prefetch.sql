-- The loop's pre-fetch calls tools too, audited with the source `prefetch`. SQLite cannot change
-- a CHECK constraint in place, so the table is rebuilt with every row and id kept, and its
-- AUTOINCREMENT counter carried over (an audit id is never reused).
CREATE TABLE audit_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    -- Milliseconds since the Unix epoch.
    at_ms BIGINT NOT NULL,
    -- The guardrail that produced the row; tool calls are G3-tool.
    mark TEXT NOT NULL,
    tool TEXT NOT NULL,
    -- model, user, prefetch or agent:N.
    source TEXT NOT NULL CHECK (source IN ('model', 'user', 'prefetch') OR source LIKE 'agent:%'),
    decision TEXT NOT NULL CHECK (decision IN ('allow', 'ask', 'deny')),
    -- ok, failed, denied: <reason>, unknown tool, ...
    outcome TEXT NOT NULL,
    session_id TEXT
);

INSERT INTO audit_new (id, at_ms, mark, tool, source, decision, outcome, session_id)
SELECT id, at_ms, mark, tool, source, decision, outcome, session_id FROM audit;

-- Inserting the old ids made a counter for audit_new; carry the old table's over, which is
-- higher when rows were ever removed.
UPDATE sqlite_sequence
SET seq = MAX(seq, COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'audit'), 0))
WHERE name = 'audit_new';

DROP TABLE audit;
ALTER TABLE audit_new RENAME TO audit;
CREATE INDEX audit_session_id ON audit (session_id, id);
