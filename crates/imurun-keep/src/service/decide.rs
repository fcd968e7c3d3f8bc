//! One way every device-signed decision is applied: under the write lock, the state it depends
//! on is read, the rules' check runs over it with the signing device as registered now, the
//! decision's nonce is consumed, and the plan is written, all in one transaction.

use imurun_keep_rules::RuleError;
use imurun_keep_rules::checks::Signer;
use imurun_keep_rules::decision::Decision;
use imurun_store::KeepTx;

use super::Core;
use super::devices::{device_key, use_nonce};
use crate::KeepError;
use crate::documents::Signed;

/// How a decision's transaction ends: a plain commit, or one that also raises a high-water mark
/// in the Keep folder (kind, subject, version).
pub(crate) enum Commit {
    Plain,
    Mark(&'static str, String, i64),
}

/// What the rules' check returned: the plan, and the verified decision whose nonce it uses.
pub(crate) trait Verified {
    fn decision(&self) -> &Decision;
}

impl Verified for Decision {
    fn decision(&self) -> &Decision {
        self
    }
}

impl Verified for imurun_keep_rules::checks::tool_decision::Plan {
    fn decision(&self) -> &Decision {
        &self.decision
    }
}

impl Core {
    /// Applies `envelope`, `user`'s decision: `read` reads the state in the transaction,
    /// `check` is the rules' check over it, `apply` writes the plan and says how to commit.
    pub(crate) async fn decide_under_lock<S, P: Verified, R>(
        &self,
        user: &str,
        envelope: &Signed,
        read: impl AsyncFnOnce(&mut KeepTx) -> Result<S, KeepError>,
        check: impl FnOnce(&S, Signer<'_>) -> Result<P, RuleError>,
        apply: impl AsyncFnOnce(&mut KeepTx, &S, P) -> Result<(R, Commit), KeepError>,
    ) -> Result<R, KeepError> {
        let mut tx = self.store().keep_begin().await?;
        let state = read(&mut tx).await?;
        let device = match tx.device(&envelope.signature.key_id).await? {
            Some(row) => Some(device_key(row)?),
            None => None,
        };
        let now_s = self.now_s();
        let signer = Signer {
            user,
            device: device.as_ref(),
            now_s,
        };
        let plan = check(&state, signer)?;
        use_nonce(&mut tx, plan.decision(), now_s).await?;
        let (result, commit) = apply(&mut tx, &state, plan).await?;
        match commit {
            Commit::Plain => tx.commit().await?,
            Commit::Mark(kind, subject, version) => {
                self.commit_and_mark(tx, (kind, subject, version)).await?;
            }
        }
        Ok(result)
    }
}
