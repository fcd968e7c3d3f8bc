//! Which key may sign what, and whether a signed document may be accepted now: the trust root's
//! roles, retirement, rotation, expiry and rollback protection (after TUF).
//!
//! - A bundle is accepted only with a signature by an active `signer` key over its SHA-256.
//! - Policies, ceilings and the next trust root need an active `policy` key.
//! - A retired key's signature is refused for anything new, whatever the document says.
//! - Every document has an `expires_at`; past it, it is refused.
//! - A version must be above the highest the host accepted for the same subject; the host keeps
//!   those high-water marks in its database and checks them again when it reads a stored
//!   document back, so restoring an old row does not bring an old document back.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::RuleError;
use crate::documents::{
    CEILING_TYPE, Ceiling, KeyRole, POLICY_TYPE, Policy, Signature, Signed, TRUST_ROOT_TYPE,
    TrustRoot,
};
use crate::keys::{KeyPair, PublicKey};
use crate::manifest::Manifest;

/// The trust root in force.
#[derive(Debug, Clone)]
pub struct Trust {
    root: TrustRoot,
}

impl Trust {
    /// The first trust root, made by `keep init`: trusted because the operator installed it,
    /// and checked to be signed by one of its own policy keys.
    pub fn install(envelope: &Signed, now: i64) -> Result<Trust, RuleError> {
        let root = TrustRoot::from_document(&envelope.signed)?;
        let trust = Trust { root };
        trust.check_signed(envelope, KeyRole::Policy, TRUST_ROOT_TYPE)?;
        check_expiry("the trust root", trust.root.expires_at, now)?;
        Ok(trust)
    }

    /// A stored trust root read back; `highest` is the highest root version the host accepted.
    /// The stored root must be that version: an older one restored is refused.
    ///
    /// A rotated root is signed by a key of the root before it, which the new root may list as
    /// retired: its signature was checked against that root when it was accepted, so here any
    /// policy key the root lists, retired or not, may have signed it.
    pub fn load(envelope: &Signed, highest: i64, now: i64) -> Result<Trust, RuleError> {
        let trust = Trust::load_expired(envelope, highest)?;
        check_expiry("the trust root", trust.root.expires_at, now)?;
        Ok(trust)
    }

    /// [`Trust::load`] without the expiry check: only to verify the next root, which an expired
    /// root may still sign (otherwise an expired root could never be replaced).
    pub fn load_expired(envelope: &Signed, highest: i64) -> Result<Trust, RuleError> {
        let root = TrustRoot::from_document(&envelope.signed)?;
        let listed = root
            .keys
            .iter()
            .find(|key| key.key_id == envelope.signature.key_id && key.role == KeyRole::Policy)
            .ok_or_else(|| {
                RuleError::Untrusted("the stored trust root is not signed by a key it lists".into())
            })?;
        envelope.verify_with(&PublicKey::from_hex(&listed.public_key)?, TRUST_ROOT_TYPE)?;
        let trust = Trust { root };
        if trust.root.version != highest {
            return Err(RuleError::RolledBack {
                what: "the stored trust root".into(),
                version: trust.root.version,
                highest,
            });
        }
        Ok(trust)
    }

    /// The root in force.
    pub fn root(&self) -> &TrustRoot {
        &self.root
    }

    /// The next trust root, if this one's active policy key signed it, its version is higher
    /// and it has not expired. Returns the new trust to put in force.
    ///
    /// The new root must list the key that signed it (as active or retired): that is how the
    /// host, reading the stored root back, knows which key to check it against.
    pub fn rotate(&self, envelope: &Signed, now: i64) -> Result<Trust, RuleError> {
        self.check_signed(envelope, KeyRole::Policy, TRUST_ROOT_TYPE)?;
        let next = TrustRoot::from_document(&envelope.signed)?;
        let lists_signer = next
            .keys
            .iter()
            .any(|key| key.key_id == envelope.signature.key_id && key.role == KeyRole::Policy);
        if !lists_signer {
            return Err(RuleError::invalid(
                "trust_root.keys",
                format!(
                    "the new root must list the policy key that signs it ({}), retired if it is \
                     being replaced",
                    envelope.signature.key_id
                ),
            ));
        }
        check_increases("the trust root", next.version, self.root.version)?;
        check_expiry("the new trust root", next.expires_at, now)?;
        Ok(Trust { root: next })
    }

    /// A policy signed by an active policy key, not expired; with its validated manifest.
    /// Rollback against the agent's deployed versions is the caller's check.
    pub fn verify_policy(
        &self,
        envelope: &Signed,
        now: i64,
    ) -> Result<(Policy, Manifest), RuleError> {
        self.check_signed(envelope, KeyRole::Policy, POLICY_TYPE)?;
        let (policy, manifest) = Policy::from_document(&envelope.signed)?;
        check_expiry(
            &format!("the policy for {}", policy.agent),
            policy.expires_at,
            now,
        )?;
        Ok((policy, manifest))
    }

    /// Whether `envelope` of type `kind` is signed by an active key of `role` this root lists:
    /// what a refusal says of the version and key id it names (verified, or only claimed).
    pub fn signature_holds(&self, envelope: &Signed, role: KeyRole, kind: &str) -> bool {
        self.check_signed(envelope, role, kind).is_ok()
    }

    /// A ceiling signed by an active policy key, not expired.
    pub fn verify_ceiling(&self, envelope: &Signed, now: i64) -> Result<Ceiling, RuleError> {
        self.check_signed(envelope, KeyRole::Policy, CEILING_TYPE)?;
        let ceiling = Ceiling::from_document(&envelope.signed)?;
        check_expiry(
            &format!("the ceiling for {}", ceiling.user),
            ceiling.expires_at,
            now,
        )?;
        Ok(ceiling)
    }

    /// A stored document (a ceiling or a policy the host accepted) read back: its signature must
    /// be by a policy key this root lists, active or retired (a document signed before its key
    /// was retired stays valid), and its `type` must be `kind`. Guards against rows edited in
    /// the database.
    pub fn verify_stored(&self, envelope: &Signed, kind: &str) -> Result<(), RuleError> {
        let listed = self
            .root
            .keys
            .iter()
            .find(|key| key.key_id == envelope.signature.key_id && key.role == KeyRole::Policy)
            .ok_or_else(|| {
                RuleError::Untrusted(format!(
                    "the stored {kind} is signed by a key trust root version {} does not list",
                    self.root.version
                ))
            })?;
        envelope.verify_with(&PublicKey::from_hex(&listed.public_key)?, kind)
    }

    /// A bundle signed by an active signer key: the signature covers the bundle's SHA-256 (32
    /// bytes). Returns the SHA-256 in hexadecimal.
    pub fn verify_bundle(&self, bundle: &[u8], signature: &Signature) -> Result<String, RuleError> {
        let key = self.key_for(signature, KeyRole::Signer)?;
        verify_bundle_signature(bundle, signature, &key)
    }

    fn check_signed(&self, envelope: &Signed, role: KeyRole, kind: &str) -> Result<(), RuleError> {
        let key = self.key_for(&envelope.signature, role)?;
        envelope.verify_with(&key, kind)
    }

    /// The active key of `role` that made `signature`.
    fn key_for(&self, signature: &Signature, role: KeyRole) -> Result<PublicKey, RuleError> {
        let listed = self
            .root
            .keys
            .iter()
            .find(|key| key.key_id == signature.key_id)
            .ok_or_else(|| {
                RuleError::Untrusted(format!(
                    "key {} is not in trust root version {}",
                    crate::manifest::cut(&signature.key_id),
                    self.root.version
                ))
            })?;
        if listed.role != role {
            return Err(RuleError::Untrusted(format!(
                "key {} is a {:?} key; this needs a {role:?} key",
                listed.key_id, listed.role
            )));
        }
        if listed.retired {
            return Err(RuleError::Untrusted(format!(
                "key {} is retired (trust root version {})",
                listed.key_id, self.root.version
            )));
        }
        PublicKey::from_hex(&listed.public_key)
    }
}

/// Signs a bundle's SHA-256 with `key`.
pub fn sign_bundle(bundle: &[u8], key: &KeyPair) -> Signature {
    Signature {
        key_id: key.key_id(),
        sig: key.sign(&Sha256::digest(bundle)),
    }
}

/// Checks that `key` (whose id must be the one named) signed `bundle`'s SHA-256; returns the
/// SHA-256 in hexadecimal.
pub fn verify_bundle_signature(
    bundle: &[u8],
    signature: &Signature,
    key: &PublicKey,
) -> Result<String, RuleError> {
    if key.key_id() != signature.key_id {
        return Err(RuleError::Signature(format!(
            "signed by key {}, not by {}",
            crate::manifest::cut(&signature.key_id),
            key.key_id()
        )));
    }
    let digest = Sha256::digest(bundle);
    key.verify(&digest, &signature.sig).map_err(|_| {
        RuleError::Signature("the bundle's signature does not match its bytes".into())
    })?;
    Ok(hex::encode(digest))
}

/// Refuses a document whose `expires_at` is not after `now`.
pub fn check_expiry(what: &str, expires_at: i64, now: i64) -> Result<(), RuleError> {
    if expires_at <= now {
        return Err(RuleError::Expired {
            what: what.to_owned(),
            expires_at,
            now,
        });
    }
    Ok(())
}

/// Refuses a version that is not above `highest`.
pub fn check_increases(what: &str, version: i64, highest: i64) -> Result<(), RuleError> {
    if version <= highest {
        return Err(RuleError::RolledBack {
            what: what.to_owned(),
            version,
            highest,
        });
    }
    Ok(())
}

/// The `type` a document names, for messages.
pub fn document_type(document: &Value) -> Option<&str> {
    document.get("type").and_then(Value::as_str)
}
