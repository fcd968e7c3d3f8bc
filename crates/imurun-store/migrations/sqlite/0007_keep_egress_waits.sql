-- Egress uses waiting for their person, as every host sees them: a cell waits on one host,
-- and its person's answer may reach another (several hosts behind one load balancer share
-- one database). The row lives while the use waits; the host whose cell waits deletes it when
-- the wait ends. Another host's answer moves `state` once, from `waiting`, and tells the
-- waiting host (PostgreSQL's NOTIFY), which hands it to the cell.
--
-- A migration that has run is never edited (sqlx checks its checksum): change the schema in a
-- new file, in both folders.
CREATE TABLE keep_egress_waits (
    id TEXT PRIMARY KEY,
    user_name TEXT NOT NULL,
    -- The host whose cell waits (keep.host_id).
    host TEXT NOT NULL,
    -- What the person is shown and what a device decision must name, as JSON text.
    view TEXT NOT NULL,
    asked_at_ms BIGINT NOT NULL,
    -- When the cell stops waiting (its rule's approval timeout): listed and answered only
    -- before, so a row its host could not delete never stands for a live wait.
    expires_at_ms BIGINT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('waiting', 'approved', 'denied')),
    answered_at_ms BIGINT,
    -- The person's device-signed decision the answer came with (an envelope as JSON), if any.
    decision TEXT,
    -- The answering host's seal (the host key's signature) over the id, the person, the waiting
    -- host, the answer and the decision: the waiting host releases a use only on an answer
    -- whose seal verifies, so an answer written into the database by hand releases nothing.
    seal TEXT
);

CREATE INDEX keep_egress_waits_by_user ON keep_egress_waits (user_name, state, asked_at_ms);
CREATE INDEX keep_egress_waits_by_host ON keep_egress_waits (host);
