-- PostgreSQL's dialect of ../sqlite/0004_keep.sql: the same tables, columns and constraints, with
-- PostgreSQL's spelling where the dialects differ (see ../README.md). A migration that has run
-- is never edited (sqlx checks its checksum): change the schema in a new file, in both folders.
CREATE TABLE keep_tokens (
    -- The first 12 hexadecimal characters of the hash: names the token without revealing it.
    id TEXT COLLATE "C" PRIMARY KEY,
    hash TEXT COLLATE "C" NOT NULL UNIQUE,
    role TEXT COLLATE "C" NOT NULL CHECK (role IN ('operator', 'user')),
    user_name TEXT COLLATE "C",
    created_at_ms BIGINT NOT NULL,
    revoked_at_ms BIGINT
);

-- The highest version the host ever accepted per kind of document and subject ('trust_root'/'',
-- 'ceiling'/user, 'agent'/name). Only ever raised; checked again when a stored document is read,
-- so a restored old row is refused.
CREATE TABLE keep_versions (
    kind TEXT COLLATE "C" NOT NULL,
    subject TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (kind, subject)
);

-- The signed documents in force: the trust root ('trust_root'/'') and each user's ceiling
-- ('ceiling'/user), as the envelope's JSON text.
CREATE TABLE keep_documents (
    kind TEXT COLLATE "C" NOT NULL,
    subject TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    envelope TEXT COLLATE "C" NOT NULL,
    -- The host key's signature over the row as accepted (see imurun-keep's `seal.rs`): a row
    -- edited in the database, or one the host never accepted, does not verify.
    seal TEXT COLLATE "C" NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    PRIMARY KEY (kind, subject)
);

-- Deployed agents; every version is kept (versions are immutable), the highest is in force.
CREATE TABLE keep_agents (
    name TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    owner TEXT COLLATE "C" NOT NULL,
    bundle_sha256 TEXT COLLATE "C" NOT NULL,
    bundle_size BIGINT NOT NULL,
    bundle BYTEA NOT NULL,
    -- The signer's signature over the bundle's SHA-256, as JSON {key_id, sig}.
    bundle_signature TEXT COLLATE "C" NOT NULL,
    -- The operator's signed policy, as the envelope's JSON text.
    policy TEXT COLLATE "C" NOT NULL,
    -- The validated manifest (hosts in normal form), as JSON text; what is served is read from
    -- the signed policy.
    manifest TEXT COLLATE "C" NOT NULL,
    -- The host key's signature over the row as accepted.
    seal TEXT COLLATE "C" NOT NULL,
    deployed_at_ms BIGINT NOT NULL,
    PRIMARY KEY (name, version)
);

-- Credentials, sealed. `owner` is 'operator' or 'user:<name>'.
CREATE TABLE keep_vault (
    owner TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    sealed BYTEA NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    PRIMARY KEY (owner, name)
);

-- Users' device keys (Ed25519 public keys).
CREATE TABLE keep_devices (
    key_id TEXT COLLATE "C" PRIMARY KEY,
    user_name TEXT COLLATE "C" NOT NULL,
    public_key TEXT COLLATE "C" NOT NULL,
    label TEXT COLLATE "C" NOT NULL,
    created_at_ms BIGINT NOT NULL,
    retired_at_ms BIGINT
);

CREATE INDEX keep_devices_by_user ON keep_devices (user_name, created_at_ms);

-- One-time enrolment codes for a user's first device, as hashes.
CREATE TABLE keep_enrol_codes (
    hash TEXT COLLATE "C" PRIMARY KEY,
    user_name TEXT COLLATE "C" NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    used_at_ms BIGINT
);

-- Decision nonces already used, per user; kept until the decision would have expired anyway.
CREATE TABLE keep_nonces (
    user_name TEXT COLLATE "C" NOT NULL,
    nonce TEXT COLLATE "C" NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (user_name, nonce)
);

-- The journal: append-only, each entry holding the SHA-256 of the one before.
CREATE TABLE keep_journal (
    seq BIGINT NOT NULL PRIMARY KEY CHECK (seq >= 1),
    at_ms BIGINT NOT NULL,
    actor TEXT COLLATE "C" NOT NULL,
    user_name TEXT COLLATE "C",
    kind TEXT COLLATE "C" NOT NULL,
    subject TEXT COLLATE "C" NOT NULL,
    detail TEXT COLLATE "C" NOT NULL,
    prev_hash TEXT COLLATE "C" NOT NULL,
    hash TEXT COLLATE "C" NOT NULL
);

CREATE INDEX keep_journal_by_user ON keep_journal (user_name, seq);

-- The journal's head, kept apart so that deleting the newest entries is found. One row; every
-- Keep write takes its lock first, which serialises Keep's writes (they are operator- and
-- person-paced) and the journal's appends.
CREATE TABLE keep_journal_head (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    seq BIGINT NOT NULL,
    hash TEXT COLLATE "C" NOT NULL
);

INSERT INTO keep_journal_head (one, seq, hash) VALUES (1, 0, '');
