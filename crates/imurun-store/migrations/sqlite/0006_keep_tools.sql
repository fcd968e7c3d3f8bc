-- Agent-proposed tools: what a cell proposed for its person, and what the person approved on
-- a device and the host deployed in the person's namespace (u/<user>/<name>).

-- A tool a cell proposed (`tool.propose`): stored for the session's person and nothing else.
-- The manifest is the proposed one as validated; what deploys is it clamped by the person's
-- ceiling at the moment of approval.
CREATE TABLE keep_tool_proposals (
    id TEXT PRIMARY KEY,
    user_name TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES keep_sessions (id),
    -- The proposing agent, its version and the key that signed its bundle.
    agent TEXT NOT NULL,
    agent_version BIGINT NOT NULL,
    signer_key_id TEXT NOT NULL,
    name TEXT NOT NULL,
    version BIGINT NOT NULL,
    description TEXT NOT NULL,
    manifest TEXT NOT NULL,
    bundle_sha256 TEXT NOT NULL,
    bundle_size BIGINT NOT NULL,
    bundle BLOB NOT NULL,
    tainted INTEGER NOT NULL CHECK (tainted IN (0, 1)),
    taint_source TEXT,
    state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied')),
    created_at_ms BIGINT NOT NULL,
    decided_at_ms BIGINT,
    -- The host key's signature over the row as stored (all but its state): a proposal edited
    -- in the database (its taint lifted, its manifest changed) cannot be approved.
    seal TEXT NOT NULL
);

CREATE INDEX keep_tool_proposals_by_user ON keep_tool_proposals (user_name, state, created_at_ms);

-- A deployed tool version. The version in force for a name is its highest; a revoke marks
-- every version of the name, so none is in force until a newer one is approved.
CREATE TABLE keep_tools (
    user_name TEXT NOT NULL,
    name TEXT NOT NULL,
    version BIGINT NOT NULL,
    proposal_id TEXT NOT NULL REFERENCES keep_tool_proposals (id),
    bundle_sha256 TEXT NOT NULL,
    bundle BLOB NOT NULL,
    -- The clamped manifest the person approved, as JSON text.
    manifest TEXT NOT NULL,
    -- The person's signed decision, as the envelope's JSON text.
    decision TEXT NOT NULL,
    tainted INTEGER NOT NULL CHECK (tainted IN (0, 1)),
    taint_source TEXT,
    -- The person's signed clear-taint decision, once made.
    taint_cleared TEXT,
    -- The host key's signature over the row as accepted (and again when its taint is cleared).
    seal TEXT NOT NULL,
    deployed_at_ms BIGINT NOT NULL,
    revoked_at_ms BIGINT,
    PRIMARY KEY (user_name, name, version)
);
