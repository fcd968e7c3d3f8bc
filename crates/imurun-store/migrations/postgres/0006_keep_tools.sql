-- PostgreSQL's dialect of ../sqlite/0006_keep_tools.sql: the same tables, columns and constraints, with
-- PostgreSQL's spelling where the dialects differ (see ../README.md). A migration that has run
-- is never edited (sqlx checks its checksum): change the schema in a new file, in both folders.
CREATE TABLE keep_tool_proposals (
    id TEXT COLLATE "C" PRIMARY KEY,
    user_name TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES keep_sessions (id),
    -- The proposing agent, its version and the key that signed its bundle.
    agent TEXT COLLATE "C" NOT NULL,
    agent_version BIGINT NOT NULL,
    signer_key_id TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    description TEXT COLLATE "C" NOT NULL,
    manifest TEXT COLLATE "C" NOT NULL,
    bundle_sha256 TEXT COLLATE "C" NOT NULL,
    bundle_size BIGINT NOT NULL,
    bundle BYTEA NOT NULL,
    tainted BIGINT NOT NULL CHECK (tainted IN (0, 1)),
    taint_source TEXT COLLATE "C",
    state TEXT COLLATE "C" NOT NULL CHECK (state IN ('pending', 'approved', 'denied')),
    created_at_ms BIGINT NOT NULL,
    decided_at_ms BIGINT,
    -- The host key's signature over the row as stored (all but its state): a proposal edited
    -- in the database (its taint lifted, its manifest changed) cannot be approved.
    seal TEXT COLLATE "C" NOT NULL
);

CREATE INDEX keep_tool_proposals_by_user ON keep_tool_proposals (user_name, state, created_at_ms);

-- A deployed tool version. The version in force for a name is its highest; a revoke marks
-- every version of the name, so none is in force until a newer one is approved.
CREATE TABLE keep_tools (
    user_name TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    proposal_id TEXT COLLATE "C" NOT NULL REFERENCES keep_tool_proposals (id),
    bundle_sha256 TEXT COLLATE "C" NOT NULL,
    bundle BYTEA NOT NULL,
    -- The clamped manifest the person approved, as JSON text.
    manifest TEXT COLLATE "C" NOT NULL,
    -- The person's signed decision, as the envelope's JSON text.
    decision TEXT COLLATE "C" NOT NULL,
    tainted BIGINT NOT NULL CHECK (tainted IN (0, 1)),
    taint_source TEXT COLLATE "C",
    -- The person's signed clear-taint decision, once made.
    taint_cleared TEXT COLLATE "C",
    -- The host key's signature over the row as accepted (and again when its taint is cleared).
    seal TEXT COLLATE "C" NOT NULL,
    deployed_at_ms BIGINT NOT NULL,
    revoked_at_ms BIGINT,
    PRIMARY KEY (user_name, name, version)
);
