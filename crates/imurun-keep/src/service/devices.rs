//! Users' device keys: enrolment codes (operator), the first device (token plus code), later
//! devices (a decision signed by an existing device), retiring, and the decision verifier with
//! its nonce consumed in the same write as what the decision allows.

use imurun_keep_rules::RuleError;
use imurun_keep_rules::checks::{Attempt, enrol, retire_device};
use imurun_store::KeepTx;

use serde::Serialize;

use super::decide::Commit;
use super::{Core, Devices, Identity, append};
use crate::KeepError;
use crate::decision::{Decision, DeviceKey};
use crate::documents::{Signed, check_user};
use crate::journal_detail::{DeviceDetail, EnrolCodeDetail};
use crate::keys::PublicKey;
use crate::tokens::{ENROL_CODE_PREFIX, TOKEN_BYTES_MAX, new_secret, secret_hash};

/// Why a person's sessions ended when she retired her last device.
const LAST_DEVICE_RETIRED: &str = "her last device was retired";

/// How long an enrolment code works by default, in seconds.
pub const ENROL_CODE_TTL_S_DEFAULT: i64 = 15 * 60;
/// The longest an enrolment code may work, in seconds.
pub const ENROL_CODE_TTL_S_MAX: i64 = 7 * 24 * 60 * 60;

/// How a new device proves it is the user's.
#[derive(Debug, Clone)]
pub enum EnrolProof {
    /// The user's first device: a one-time code the operator issued.
    Code(String),
    /// Any later device: an `enrol_device` decision signed by one of the user's devices.
    Decision(Signed),
}

/// A device key as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepDeviceView))]
pub struct DeviceView {
    pub key_id: String,
    pub public_key: String,
    pub label: String,
    pub created_at_ms: i64,
    pub retired_at_ms: Option<i64>,
}

impl Devices<'_> {
    /// Issues a one-time enrolment code for `user` (operator only), working for `ttl_s` seconds.
    /// Refused while she has a live device: a code enrols only a first device, and one kept
    /// back until she retired her devices would enrol a key in her name unseen.
    pub async fn enrol_code(
        self,
        caller: &Identity,
        user: &str,
        ttl_s: i64,
    ) -> Result<String, KeepError> {
        caller.require_operator()?;
        check_user(user, "user")?;
        crate::manifest::check_range(ttl_s, 1, ENROL_CODE_TTL_S_MAX, "ttl_s")?;
        let code = new_secret(self.core.random(), ENROL_CODE_PREFIX)?;
        let expires_at_ms = self
            .core
            .now_s()
            .saturating_add(ttl_s)
            .saturating_mul(1_000);
        let mut tx = self.core.store().keep_begin().await?;
        if tx.live_device_count(user).await? > 0 {
            return Err(KeepError::Conflict(format!(
                "{user} has a device: a code enrols only a first device; her next device is \
                 enrolled with an `enrol_device` decision one of hers signs"
            )));
        }
        tx.insert_enrol_code(&secret_hash(&code), user, expires_at_ms)
            .await?;
        let detail = EnrolCodeDetail {
            user: user.to_owned(),
            expires_at_ms,
        };
        append(&mut tx, caller, Some(user), &format!("user:{user}"), detail).await?;
        tx.commit().await?;
        Ok(code)
    }

    /// Registers a device key for the calling user. `possession` is the new key's signature
    /// over [`possession_message`] for this user and key: proof that the caller holds the key,
    /// so that nobody registers a public key that is someone else's.
    pub async fn enrol(
        self,
        caller: &Identity,
        public_key: &str,
        label: &str,
        possession: &str,
        proof: EnrolProof,
    ) -> Result<DeviceView, KeepError> {
        let Some(user) = caller.user() else {
            return Err(KeepError::Forbidden(
                "devices belong to users: enrol with the user's token".into(),
            ));
        };
        let subject = format!("device:{}", crate::manifest::cut(public_key));
        let request = enrol::Request {
            user,
            public_key,
            label,
            possession,
        };
        // Only a refusal reads the deciding device again, for its entry.
        let envelope = match &proof {
            EnrolProof::Decision(envelope) => Some(envelope.clone()),
            EnrolProof::Code(_) => None,
        };
        match self.try_enrol(caller, &request, proof).await {
            Ok(view) => Ok(view),
            Err(error) => {
                let attempt = match &envelope {
                    Some(envelope) => Some(self.core.decision_attempt(envelope, user).await),
                    None => None,
                };
                let what = (Some(user), "enrol_device", subject.as_str());
                self.core.refuse_attempt(caller, what, attempt, error).await
            }
        }
    }

    async fn try_enrol(
        self,
        caller: &Identity,
        request: &enrol::Request<'_>,
        proof: EnrolProof,
    ) -> Result<DeviceView, KeepError> {
        let user = request.user;
        let device = enrol::read(request)?;
        // The ceiling in force is read (and verified) before the write lock; its version is read
        // again under the lock, so a decision never passes against a ceiling that just changed.
        let ceiling_version = self.keep.ceilings().in_force(user).await?.ceiling.version;
        let trust = self.core.trust_if_any().await?;
        match proof {
            EnrolProof::Code(code) => {
                let mut tx = self.core.store().keep_begin().await?;
                self.use_code(&mut tx, user, &code).await?;
                let detail = DeviceDetail::enrolled_by_code(&device.key_id, request.label);
                self.insert_device(&mut tx, caller, request, &device.key_id, detail)
                    .await?;
                tx.commit().await?;
            }
            EnrolProof::Decision(envelope) => {
                self.core
                    .decide_under_lock(
                        user,
                        &envelope,
                        async |tx| {
                            self.keep
                                .ceilings()
                                .version_locked(tx, user, trust.as_ref())
                                .await
                        },
                        |ceiling_now: &i64, signer| {
                            let snapshot = enrol::Snapshot {
                                device: &device,
                                ceiling_version,
                                ceiling_now: *ceiling_now,
                                signer,
                            };
                            enrol::check(&snapshot, &envelope)
                        },
                        async |tx, _, decision| {
                            let detail = DeviceDetail::enrolled_by_decision(
                                &device.key_id,
                                request.label,
                                &decision.device_key_id,
                                &decision.nonce,
                            );
                            self.insert_device(tx, caller, request, &device.key_id, detail)
                                .await?;
                            Ok(((), Commit::Plain))
                        },
                    )
                    .await?;
            }
        }
        self.get(caller, &device.key_id).await
    }

    /// Uses `user`'s enrolment code: only for a person with no live device yet.
    async fn use_code(self, tx: &mut KeepTx, user: &str, code: &str) -> Result<(), KeepError> {
        if tx.live_device_count(user).await? > 0 {
            return Err(KeepError::Forbidden(format!(
                "{user} has a device already: a new one needs an `enrol_device` decision \
                 signed by an existing device, not a code"
            )));
        }
        let used = code.len() <= TOKEN_BYTES_MAX
            && tx
                .use_enrol_code(
                    &secret_hash(code),
                    user,
                    self.core.now_s().saturating_mul(1_000),
                )
                .await?;
        if !used {
            return Err(KeepError::Forbidden(
                "the enrolment code is unknown, used, expired or another user's".into(),
            ));
        }
        Ok(())
    }

    /// Registers the new device and journals how it came in (`detail`). Her enrolment codes
    /// not used yet are voided: once she has a device, no code waits to enrol another.
    async fn insert_device(
        self,
        tx: &mut KeepTx,
        caller: &Identity,
        request: &enrol::Request<'_>,
        key_id: &str,
        detail: DeviceDetail,
    ) -> Result<(), KeepError> {
        let (user, label) = (request.user, request.label);
        tx.insert_device(key_id, user, request.public_key, label)
            .await
            .map_err(|error| match error {
                imurun_store::StoreError::AlreadyExists { .. } => {
                    KeepError::Conflict("this device key is registered already".into())
                }
                other => other.into(),
            })?;
        tx.void_enrol_codes(user, self.core.now_ms()).await?;
        append(tx, caller, Some(user), &format!("device:{key_id}"), detail).await
    }

    /// The calling user's device keys.
    pub async fn list(self, caller: &Identity) -> Result<Vec<DeviceView>, KeepError> {
        let Some(user) = caller.user() else {
            return Ok(Vec::new());
        };
        Ok(self
            .core
            .store()
            .keep_devices(user)
            .await?
            .into_iter()
            .map(device_view)
            .collect())
    }

    /// One of the calling user's device keys; another user's answers as one that does not exist.
    pub async fn get(self, caller: &Identity, key_id: &str) -> Result<DeviceView, KeepError> {
        let row = self.core.store().keep_device(key_id).await?;
        match (row, caller.user()) {
            (Some(row), Some(user)) if row.user_name == user => Ok(device_view(row)),
            _ => Err(KeepError::NotFound("device")),
        }
    }

    /// Retires one of the calling user's device keys with `envelope`, a `retire_device`
    /// decision signed by one of her live devices (the key itself included): it signs nothing
    /// from now on. Her token alone retires nothing, so whoever can make her a token cannot
    /// clear the way for a device of his own.
    pub async fn retire(
        self,
        caller: &Identity,
        key_id: &str,
        envelope: &Signed,
    ) -> Result<DeviceView, KeepError> {
        let Some(user) = caller.user() else {
            return Err(KeepError::Forbidden(
                "devices belong to users: a device is retired with a decision one of the \
                 user's devices signs, sent with the user's token"
                    .into(),
            ));
        };
        let subject = format!("device:{}", crate::manifest::cut(key_id));
        match self.try_retire(caller, user, key_id, envelope).await {
            Ok(ended_sessions) => {
                // Their rows ended with the retirement; this host's cells stop now. The
                // retirement stands whatever happens here: a cell whose row ended is refused at
                // its next step anyway.
                if ended_sessions
                    && let Err(error) = self
                        .keep
                        .sessions()
                        .stop_all_of(user, LAST_DEVICE_RETIRED)
                        .await
                {
                    tracing::warn!(%error, user, "her sessions' cells did not all stop here");
                }
                self.get(caller, key_id).await
            }
            Err(error) => {
                let attempt = self.core.decision_attempt(envelope, user).await;
                let what = (Some(user), "retire_device", subject.as_str());
                self.core
                    .refuse_attempt(caller, what, Some(attempt), error)
                    .await
            }
        }
    }

    async fn try_retire(
        self,
        caller: &Identity,
        user: &str,
        key_id: &str,
        envelope: &Signed,
    ) -> Result<bool, KeepError> {
        self.core
            .decide_under_lock(
                user,
                envelope,
                async |tx| match tx.device(key_id).await? {
                    // Another person's key answers as one that does not exist.
                    Some(row) if row.user_name == user => device_key(row),
                    _ => Err(KeepError::NotFound("device")),
                },
                |device: &DeviceKey, signer| {
                    retire_device::check(&retire_device::Snapshot { device, signer }, envelope)
                },
                async |tx, _, decision| {
                    if !tx.retire_device(key_id, user).await? {
                        return Err(KeepError::Conflict(format!(
                            "device {key_id} was retired meanwhile"
                        )));
                    }
                    // Her last device: what waits for her decision is closed, and her
                    // sessions end on every host (so do the network uses waiting in them), in
                    // this same write: a device enrolled later (with a code, so by whoever
                    // holds her token and a code) decides nothing that was asked of her before.
                    let (proposals_closed, sessions_ended) = if tx.live_device_count(user).await?
                        == 0
                    {
                        let (tools, others) = tx.close_pending_proposals(user).await?;
                        let ended =
                            super::sessions::end_all_running(tx, user, LAST_DEVICE_RETIRED).await?;
                        (tools + others, ended)
                    } else {
                        (0, 0)
                    };
                    let detail = DeviceDetail::Retire {
                        key_id: key_id.to_owned(),
                        decided_by: Some(decision.device_key_id.clone()),
                        nonce: Some(decision.nonce.clone()),
                        proposals_closed,
                        sessions_ended: u64::try_from(sessions_ended).unwrap_or(u64::MAX),
                    };
                    append(tx, caller, Some(user), &format!("device:{key_id}"), detail).await?;
                    Ok((sessions_ended > 0, Commit::Plain))
                },
            )
            .await
    }

    /// Retires `user`'s live device `key_id`, journaled as the operator's (revoking her);
    /// whether it was live.
    pub(crate) async fn retire_as(
        self,
        caller: &Identity,
        user: &str,
        key_id: &str,
    ) -> Result<bool, KeepError> {
        let mut tx = self.core.store().keep_begin().await?;
        if !tx.retire_device(key_id, user).await? {
            return Ok(false);
        }
        let detail = DeviceDetail::Retire {
            key_id: key_id.to_owned(),
            decided_by: None,
            nonce: None,
            // Revoking her closed her proposals and ended her sessions first.
            proposals_closed: 0,
            sessions_ended: 0,
        };
        append(
            &mut tx,
            caller,
            Some(user),
            &format!("device:{key_id}"),
            detail,
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }
}

/// Consumes a verified decision's nonce in `tx`; refused when it was used before.
pub(crate) async fn use_nonce(
    tx: &mut imurun_store::KeepTx,
    decision: &Decision,
    now_s: i64,
) -> Result<(), KeepError> {
    if tx
        .use_nonce(&decision.user, &decision.nonce, decision.expires_at, now_s)
        .await?
    {
        Ok(())
    } else {
        Err(KeepError::Rule(RuleError::Decision(
            "its nonce was used already".into(),
        )))
    }
}

impl Core {
    /// What a refused device decision names: its key id, verified when the device registered
    /// under it is `user`'s and signed it.
    pub(crate) async fn decision_attempt(&self, envelope: &Signed, user: &str) -> Attempt {
        let device = match self.store().keep_device(&envelope.signature.key_id).await {
            Ok(Some(row)) => device_key(row).ok(),
            _ => None,
        };
        imurun_keep_rules::checks::decision_attempt(envelope, device.as_ref(), user)
    }
}

/// A registered device's row as the decision verifier's key.
pub(crate) fn device_key(row: imurun_store::DeviceRow) -> Result<DeviceKey, KeepError> {
    Ok(DeviceKey {
        key_id: row.key_id,
        public_key: PublicKey::from_hex(&row.public_key)?,
        user: row.user_name,
        retired: row.retired_at_ms.is_some(),
    })
}

pub(super) fn device_view(row: imurun_store::DeviceRow) -> DeviceView {
    DeviceView {
        key_id: row.key_id,
        public_key: row.public_key,
        label: row.label,
        created_at_ms: row.created_at_ms,
        retired_at_ms: row.retired_at_ms,
    }
}
