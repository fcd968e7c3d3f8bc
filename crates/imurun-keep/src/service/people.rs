//! People, as the operator manages them: who has tokens, with how many devices, tools and live
//! sessions; a person added (a token and an enrolment code at once); a person revoked as a
//! whole. A person is a name that tokens were made for: there is no other account.

use serde::Serialize;

use super::{DeviceView, Identity, NewToken, People, TokenRole, ToolView, append};
use crate::KeepError;
use crate::journal_detail::TokenDetail;

/// One person, as the operator sees them (`GET /v1/people`): counts, never content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepPerson))]
pub struct PersonView {
    pub user: String,
    /// Her tokens that work.
    pub tokens: usize,
    /// Her tokens revoked.
    pub tokens_revoked: usize,
    /// Her devices that sign (not retired).
    pub devices: usize,
    /// Her tools in force.
    pub tools: usize,
    /// Her sessions whose cells run on this host now.
    pub live_sessions: usize,
    /// When her first token was made.
    pub since_ms: i64,
}

/// One person, as the operator manages her (`GET /v1/people/{user}`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepPersonDetail))]
pub struct PersonDetail {
    pub person: PersonView,
    /// Her newest tokens (at most 1 000), revoked ones too: ids and dates (a token is shown
    /// only once, when it is made). `person` counts all of them.
    pub tokens: Vec<PersonToken>,
    /// Her device keys, oldest first, retired ones too: their ids, labels and dates.
    pub devices: Vec<DeviceView>,
    /// Her tools, each at its highest version, revoked ones too; without what tainted one
    /// (`taint_source` is always null here: it names something of her conversation).
    pub tools: Vec<ToolView>,
}

/// One of a person's tokens: its id and dates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepPersonToken))]
pub struct PersonToken {
    pub id: String,
    pub created_at_ms: i64,
    pub revoked_at_ms: Option<i64>,
}

/// A person added: her first token (shown once) and an enrolment code for her first device.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepPersonAdded))]
pub struct PersonAdded {
    pub user: String,
    pub token_id: String,
    /// Shown once: it is stored only as its hash.
    pub token: String,
    /// For her first device (`POST /v1/devices`); shown once.
    pub enrol_code: String,
    pub enrol_code_expires_in_s: i64,
}

/// What revoking a person did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepPersonRevoked))]
pub struct PersonRevoked {
    pub user: String,
    /// The ids of the tokens revoked: they stop working at once, her open event streams end.
    pub tokens_revoked: Vec<String>,
    /// The device keys retired: they sign nothing from now on.
    pub devices_retired: Vec<String>,
    /// Enrolment codes not used yet, voided.
    pub enrol_codes_voided: u64,
    /// Her sessions stopped on this host (the cells end; a session on another host sharing
    /// the database can take no message, her tokens being revoked, and ends when that host
    /// restarts or she is revoked there).
    pub sessions_stopped: usize,
    /// Her tools revoked (`u/<user>/<name>`): no call reaches them from now on.
    pub tools_revoked: Vec<String>,
    /// Her proposals still waiting for a decision (tools, plans, suggestions, memory entries,
    /// cards), closed: a device enrolled for her later decides none of them.
    pub proposals_closed: u64,
}

impl People<'_> {
    /// Everyone tokens were made for, by name.
    pub async fn list(self, caller: &Identity) -> Result<Vec<PersonView>, KeepError> {
        caller.require_operator()?;
        let mut people = Vec::new();
        for row in self.core.store().keep_token_users().await? {
            people.push(self.counted(row).await?);
        }
        Ok(people)
    }

    /// One person, as the operator manages her: her counts, her tokens (ids and dates, never
    /// the tokens), her devices and her tools. Someone no token was ever made for is not found.
    pub async fn get(self, caller: &Identity, user: &str) -> Result<PersonDetail, KeepError> {
        caller.require_operator()?;
        let Some(counted) = self.core.store().keep_token_user(user).await? else {
            return Err(KeepError::NotFound("person"));
        };
        let person = self.counted(counted).await?;
        let tokens = self
            .core
            .store()
            .keep_tokens_of(user)
            .await?
            .into_iter()
            .map(|row| PersonToken {
                id: row.id,
                created_at_ms: row.created_at_ms,
                revoked_at_ms: row.revoked_at_ms,
            })
            .collect();
        let tools = self
            .keep
            .tools()
            .all_of(user)
            .await?
            .into_iter()
            .map(ToolView::for_operator)
            .collect();
        let devices = self
            .core
            .store()
            .keep_devices(user)
            .await?
            .into_iter()
            .map(super::devices::device_view)
            .collect();
        Ok(PersonDetail {
            person,
            tokens,
            devices,
            tools,
        })
    }

    /// `tokens`' person with her devices, tools and live sessions counted.
    async fn counted(self, tokens: imurun_store::TokenUser) -> Result<PersonView, KeepError> {
        let user = tokens.user_name;
        let devices = self
            .core
            .store()
            .keep_devices(&user)
            .await?
            .iter()
            .filter(|device| device.retired_at_ms.is_none())
            .count();
        let tools = self.tools_in_force(&user).await?.len();
        let live_sessions = self
            .keep
            .cells()
            .map_or(0, |cells| cells.sessions_of(&user).len());
        Ok(PersonView {
            tokens: usize::try_from(tokens.live).unwrap_or(0),
            tokens_revoked: usize::try_from(tokens.revoked).unwrap_or(0),
            devices,
            tools,
            live_sessions,
            since_ms: tokens.since_ms,
            user,
        })
    }

    /// Adds `user`: makes her first token and an enrolment code for her first device.
    pub async fn add(
        self,
        caller: &Identity,
        user: &str,
        code_ttl_s: i64,
    ) -> Result<PersonAdded, KeepError> {
        caller.require_operator()?;
        // Checked before anything is made: a refused code leaves no token behind.
        if !(1..=super::ENROL_CODE_TTL_S_MAX).contains(&code_ttl_s) {
            return Err(KeepError::invalid(
                "enrol_code_ttl_s",
                format!(
                    "{code_ttl_s} is outside 1 to {}",
                    super::ENROL_CODE_TTL_S_MAX
                ),
            ));
        }
        // A person with a device gets no code (it would enrol nothing): refused before her
        // token is made, so a refusal leaves nothing behind.
        let live_devices = self
            .core
            .store()
            .keep_devices(user)
            .await?
            .iter()
            .filter(|device| device.retired_at_ms.is_none())
            .count();
        if live_devices > 0 {
            return Err(KeepError::Conflict(format!(
                "{user} is here already, with a device: make her another token with \
                 `POST /v1/tokens` (`imurun keep token create --user {user}`)"
            )));
        }
        let NewToken { id, token } = self
            .keep
            .tokens()
            .create(caller, &TokenRole::User(user.to_owned()))
            .await?;
        let enrol_code = self
            .keep
            .devices()
            .enrol_code(caller, user, code_ttl_s)
            .await?;
        Ok(PersonAdded {
            user: user.to_owned(),
            token_id: id,
            token,
            enrol_code,
            enrol_code_expires_in_s: code_ttl_s,
        })
    }

    /// Revokes `user` as a whole, in this order: her tokens (nothing she holds works from
    /// then on), her enrolment codes, her sessions on this host, her pending proposals (closed),
    /// her tools, her devices. Each
    /// step is journaled as the operator's, and one entry sums them up. Her conversations,
    /// proposals, vault entries and journal stay; a token made for her later finds no device
    /// and no tool of before. Running it again finishes what a failure left undone.
    pub async fn revoke(self, caller: &Identity, user: &str) -> Result<PersonRevoked, KeepError> {
        caller.require_operator()?;
        if self.core.store().keep_token_user(user).await?.is_none() {
            return Err(KeepError::NotFound("person"));
        }
        let mut revoked = PersonRevoked {
            user: user.to_owned(),
            tokens_revoked: Vec::new(),
            devices_retired: Vec::new(),
            enrol_codes_voided: 0,
            sessions_stopped: 0,
            tools_revoked: Vec::new(),
            proposals_closed: 0,
        };
        // Every working token, read a page at a time until none is left: each page read is
        // revoked before the next, so however many she has, none is left working.
        loop {
            let live = self.core.store().keep_live_token_ids_of(user).await?;
            if live.is_empty() {
                break;
            }
            for id in live {
                match self.keep.tokens().revoke(caller, &id).await {
                    Ok(()) => revoked.tokens_revoked.push(id),
                    // Revoked meanwhile by another request: gone all the same.
                    Err(KeepError::NotFound(_)) => {}
                    Err(error) => return Err(error),
                }
            }
        }
        revoked.enrol_codes_voided = {
            let mut tx = self.core.store().keep_begin().await?;
            let voided = tx.void_enrol_codes(user, self.core.now_ms()).await?;
            tx.commit().await?;
            voided
        };
        revoked.sessions_stopped = self
            .keep
            .sessions()
            .stop_all_of(user, "the operator revoked the person")
            .await?;
        // Her sessions on other hosts end in the database: a host finds it before it hands
        // a cell of hers another message, so a token made for her later drives none of them.
        revoked.sessions_stopped += self.keep.sessions().end_everywhere(user).await?;
        // Her pending proposals are closed before anything else of hers can change: a person
        // added again under her name (and the device she, or whoever holds her new token and
        // code, enrols) decides nothing that was asked of her before.
        revoked.proposals_closed = {
            let mut tx = self.core.store().keep_begin().await?;
            let (tools, others) = tx.close_pending_proposals(user).await?;
            tx.commit().await?;
            tools + others
        };
        for name in self.tools_in_force(user).await? {
            let qualified = format!("u/{user}/{name}");
            match self.keep.tools().revoke(caller, &qualified).await {
                Ok(_) => revoked.tools_revoked.push(qualified),
                Err(KeepError::NotFound(_) | KeepError::Conflict(_)) => {}
                Err(error) => return Err(error),
            }
        }
        for device in self.core.store().keep_devices(user).await? {
            if device.retired_at_ms.is_none()
                && self
                    .keep
                    .devices()
                    .retire_as(caller, user, &device.key_id)
                    .await?
            {
                revoked.devices_retired.push(device.key_id);
            }
        }
        let detail = TokenDetail::RevokePerson {
            tokens: count(revoked.tokens_revoked.len()),
            devices: count(revoked.devices_retired.len()),
            enrol_codes: revoked.enrol_codes_voided,
            sessions: count(revoked.sessions_stopped),
            tools: count(revoked.tools_revoked.len()),
            proposals: revoked.proposals_closed,
        };
        let mut tx = self.core.store().keep_begin().await?;
        append(&mut tx, caller, Some(user), &format!("user:{user}"), detail).await?;
        tx.commit().await?;
        Ok(revoked)
    }

    /// The names of `user`'s tools in force.
    async fn tools_in_force(self, user: &str) -> Result<Vec<String>, KeepError> {
        let rows = self.core.store().keep_tools(user).await?;
        let mut names: Vec<String> = rows
            .into_iter()
            .filter(|row| row.revoked_at_ms.is_none())
            .map(|row| row.name)
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
