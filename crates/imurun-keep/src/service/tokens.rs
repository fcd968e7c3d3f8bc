//! API tokens: made and revoked by the operator, shown once, stored as hashes.

use super::{Identity, Tokens, append};
use crate::KeepError;
use crate::journal_detail::TokenDetail;
use crate::tokens::{TOKEN_BYTES_MAX, TOKEN_PREFIX, new_secret, secret_hash, token_id};

/// A token's role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRole {
    Operator,
    User(String),
}

/// A token just made: shown once.
#[derive(Debug)]
pub struct NewToken {
    pub id: String,
    pub token: String,
}

impl Tokens<'_> {
    /// Who holds `token`; unknown, revoked and malformed tokens are all [`KeepError::Unauthorized`].
    pub async fn authenticate(self, token: &str) -> Result<Identity, KeepError> {
        if token.len() > TOKEN_BYTES_MAX || !token.starts_with(TOKEN_PREFIX) {
            return Err(KeepError::Unauthorized);
        }
        let row = self
            .core
            .store
            .keep_token_by_hash(&secret_hash(token))
            .await?
            .ok_or(KeepError::Unauthorized)?;
        match (row.role.as_str(), row.user_name) {
            ("operator", _) => Ok(Identity::Operator { token_id: row.id }),
            ("user", Some(name)) => Ok(Identity::User {
                name,
                token_id: row.id,
            }),
            _ => Err(KeepError::Unauthorized),
        }
    }

    /// Whether `identity`'s token still works: a long-lived answer (an event stream) asks
    /// before each thing it sends, so a token revoked meanwhile, by any host or the command
    /// line, receives nothing more. A store that cannot answer counts as revoked.
    pub async fn still_authorized(self, identity: &Identity) -> bool {
        let token_id = match identity {
            Identity::Operator { token_id } | Identity::User { token_id, .. } => token_id,
        };
        self.core
            .store
            .keep_token_active(token_id)
            .await
            .unwrap_or(false)
    }

    /// Makes a token for `role` (operator only); the token is in the answer and nowhere else.
    pub async fn create(self, caller: &Identity, role: &TokenRole) -> Result<NewToken, KeepError> {
        caller.require_operator()?;
        if let TokenRole::User(user) = role {
            crate::documents::check_user(user, "user")?;
        }
        let token = new_secret(self.core.random(), TOKEN_PREFIX)?;
        let hash = secret_hash(&token);
        let id = token_id(&hash);
        let (role_name, user) = match role {
            TokenRole::Operator => ("operator", None),
            TokenRole::User(user) => ("user", Some(user.as_str())),
        };
        let mut tx = self.core.store.keep_begin().await?;
        tx.insert_token(&id, &hash, role_name, user).await?;
        let detail = TokenDetail::Create {
            token_id: id.clone(),
            role: role_name.to_owned(),
        };
        append(&mut tx, caller, user, &format!("token:{id}"), detail).await?;
        tx.commit().await?;
        Ok(NewToken { id, token })
    }

    /// Revokes token `id` (operator only); it stops working at once.
    pub async fn revoke(self, caller: &Identity, id: &str) -> Result<(), KeepError> {
        caller.require_operator()?;
        let mut tx = self.core.store.keep_begin().await?;
        let row = tx
            .revoke_token(id)
            .await?
            .ok_or(KeepError::NotFound("token"))?;
        let detail = TokenDetail::Revoke {
            token_id: row.id,
            role: row.role,
        };
        append(
            &mut tx,
            caller,
            row.user_name.as_deref(),
            &format!("token:{id}"),
            detail,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}
