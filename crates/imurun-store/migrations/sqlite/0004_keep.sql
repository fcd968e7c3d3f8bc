-- Keep mode's state (seed 004): tokens, signed documents and their high-water marks, deployed
-- agents, the vault, devices, enrolment codes, used decision nonces, and the hash-chained journal.
--
-- Secrets never reach this file in the clear: tokens and enrolment codes are stored as SHA-256
-- hashes, vault entries sealed with a key that lives outside the database. Times are
-- milliseconds since the Unix epoch (BIGINT), except where a signed document's own seconds are
-- copied. Every line below is valid PostgreSQL as written but BLOB, which is BYTEA there.

-- Bearer tokens. `role` is 'operator' or 'user'; a user token names its user.
CREATE TABLE keep_tokens (
    -- The first 12 hexadecimal characters of the hash: names the token without revealing it.
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('operator', 'user')),
    user_name TEXT,
    created_at_ms BIGINT NOT NULL,
    revoked_at_ms BIGINT
);

-- The highest version the host ever accepted per kind of document and subject ('trust_root'/'',
-- 'ceiling'/user, 'agent'/name). Only ever raised; checked again when a stored document is read,
-- so a restored old row is refused.
CREATE TABLE keep_versions (
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (kind, subject)
);

-- The signed documents in force: the trust root ('trust_root'/'') and each user's ceiling
-- ('ceiling'/user), as the envelope's JSON text.
CREATE TABLE keep_documents (
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    version BIGINT NOT NULL,
    envelope TEXT NOT NULL,
    -- The host key's signature over the row as accepted (see imurun-keep's `seal.rs`): a row
    -- edited in the database, or one the host never accepted, does not verify.
    seal TEXT NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    PRIMARY KEY (kind, subject)
);

-- Deployed agents; every version is kept (versions are immutable), the highest is in force.
CREATE TABLE keep_agents (
    name TEXT NOT NULL,
    version BIGINT NOT NULL,
    owner TEXT NOT NULL,
    bundle_sha256 TEXT NOT NULL,
    bundle_size BIGINT NOT NULL,
    bundle BLOB NOT NULL,
    -- The signer's signature over the bundle's SHA-256, as JSON {key_id, sig}.
    bundle_signature TEXT NOT NULL,
    -- The operator's signed policy, as the envelope's JSON text.
    policy TEXT NOT NULL,
    -- The validated manifest (hosts in normal form), as JSON text; what is served is read from
    -- the signed policy.
    manifest TEXT NOT NULL,
    -- The host key's signature over the row as accepted.
    seal TEXT NOT NULL,
    deployed_at_ms BIGINT NOT NULL,
    PRIMARY KEY (name, version)
);

-- Credentials, sealed. `owner` is 'operator' or 'user:<name>'.
CREATE TABLE keep_vault (
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    sealed BLOB NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    PRIMARY KEY (owner, name)
);

-- Users' device keys (Ed25519 public keys).
CREATE TABLE keep_devices (
    key_id TEXT PRIMARY KEY,
    user_name TEXT NOT NULL,
    public_key TEXT NOT NULL,
    label TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    retired_at_ms BIGINT
);

CREATE INDEX keep_devices_by_user ON keep_devices (user_name, created_at_ms);

-- One-time enrolment codes for a user's first device, as hashes.
CREATE TABLE keep_enrol_codes (
    hash TEXT PRIMARY KEY,
    user_name TEXT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    used_at_ms BIGINT
);

-- Decision nonces already used, per user; kept until the decision would have expired anyway.
CREATE TABLE keep_nonces (
    user_name TEXT NOT NULL,
    nonce TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (user_name, nonce)
);

-- The journal: append-only, each entry holding the SHA-256 of the one before.
CREATE TABLE keep_journal (
    seq BIGINT NOT NULL PRIMARY KEY CHECK (seq >= 1),
    at_ms BIGINT NOT NULL,
    actor TEXT NOT NULL,
    user_name TEXT,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);

CREATE INDEX keep_journal_by_user ON keep_journal (user_name, seq);

-- The journal's head, kept apart so that deleting the newest entries is found. One row; every
-- Keep write takes its lock first, which serialises Keep's writes (they are operator- and
-- person-paced) and the journal's appends.
CREATE TABLE keep_journal_head (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
);

INSERT INTO keep_journal_head (one, seq, hash) VALUES (1, 0, '');
