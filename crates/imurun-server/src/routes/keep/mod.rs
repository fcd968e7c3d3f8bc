//! Keep mode's routes under `/v1`, one file per resource, and their entries of the route table.
//! Each answers only in Keep mode (otherwise 404 `keep_off`); operator routes refuse a user
//! token before reading the body, the Keep service decides who may do what again, and
//! `ApiError::from` puts its refusals on the wire.
//!
//! | file | routes |
//! | --- | --- |
//! | [`agents`] | `POST /v1/agents` (operator), `GET /v1/agents`, `GET /v1/agents/{name}` (operator) |
//! | [`ceilings`] | `PUT /v1/ceilings/{user}` (operator), `GET /v1/ceilings/{user}` |
//! | [`trust`] | `GET`/`POST /v1/trust-root` (operator) |
//! | [`tokens`] | `GET /v1/whoami`, `POST /v1/tokens` and `DELETE /v1/tokens/{id}` (operator) |
//! | [`devices`] | `POST /v1/enrol-codes` (operator), `GET`/`POST /v1/devices`, `GET /v1/devices/{key_id}`, `POST /v1/devices/{key_id}/retire` |
//! | [`vault`] | `GET /v1/vault`, `PUT`/`DELETE /v1/vault/{name}` |
//! | [`journal`] | `GET /v1/journal`, `GET /v1/journal/{seq}`, `GET /v1/journal/verify` |
//! | [`sessions`] | `POST`/`GET /v1/sessions`, `GET /v1/sessions/{id}`, `POST /v1/sessions/{id}/messages`, `/files`, `/stop`; `GET /v1/events` |
//! | [`proposals`] | `GET /v1/proposals`, `GET /v1/proposals/{id}`, `POST /v1/proposals/{id}/accept`, `/reject`, `/decision` |
//! | [`tools`] | `GET /v1/tools`, `GET /v1/tools/{name}`, `POST /v1/tools/{name}/revoke`, `/clear-taint` |
//! | [`approvals`] | `GET /v1/approvals`, `POST /v1/approvals/{id}` |
//! | [`settings`] | `GET`/`PUT /v1/settings/tool-propose` (operator) |
//!
//! Who the caller is comes from `keep_auth.rs` (`KeepCaller`, `OperatorCaller`), the bodies'
//! shapes from `keep_wire.rs`.

pub(crate) mod agents;
pub(crate) mod approvals;
pub(crate) mod ceilings;
pub(crate) mod devices;
pub(crate) mod journal;
pub(crate) mod people;
pub(crate) mod proposals;
pub(crate) mod sessions;
pub(crate) mod settings;
pub(crate) mod tokens;
pub(crate) mod tools;
pub(crate) mod trust;
pub(crate) mod vault;

use super::{Route, route, route_with_body_limit};
use crate::error::{ApiError, StrictJson};

/// The largest body of every Keep route but a deploy ([`agents::DEPLOY_BODY_BYTES_MAX`]) and
/// those of [`StrictDecision`]: a signed document, or a 128 KiB file, escaped.
const KEEP_BODY_BYTES_MAX: usize = 256 << 10;

/// The largest body of deciding a tool proposal, clearing a tool's taint and setting the
/// `tool.propose` switch: one signed decision.
const DECISION_BODY_BYTES_MAX: usize = 64 << 10;

type Strict<T> = StrictJson<T, KEEP_BODY_BYTES_MAX>;

type StrictDecision<T> = StrictJson<T, DECISION_BODY_BYTES_MAX>;

/// Keep's entries of the route table (`super::table`).
pub(super) fn table() -> Vec<Route> {
    [
        route_with_body_limit(
            agents::__path_deploy,
            agents::deploy,
            agents::DEPLOY_BODY_BYTES_MAX,
        ),
        route(tokens::__path_whoami, tokens::whoami),
        route(agents::__path_list, agents::list),
        route(agents::__path_detail, agents::detail),
        route(ceilings::__path_put, ceilings::put),
        route(ceilings::__path_detail, ceilings::detail),
        route(trust::__path_detail, trust::detail),
        route(trust::__path_rotate, trust::rotate),
        route(tokens::__path_create, tokens::create),
        route(tokens::__path_revoke, tokens::revoke),
        route(people::__path_list, people::list),
        route(people::__path_add, people::add),
        route(people::__path_detail, people::detail),
        route(people::__path_revoke, people::revoke),
        route(devices::__path_enrol_code, devices::enrol_code),
        route(devices::__path_list, devices::list),
        route(devices::__path_enrol, devices::enrol),
        route(devices::__path_detail, devices::detail),
        route(devices::__path_retire, devices::retire),
        route(vault::__path_list, vault::list),
        route(vault::__path_put, vault::put),
        route(vault::__path_remove, vault::remove),
        route(journal::__path_list, journal::list),
        route(journal::__path_verify, journal::verify),
        route(journal::__path_entry, journal::entry),
        route(sessions::__path_start, sessions::start),
        route(sessions::__path_list, sessions::list),
        route(sessions::__path_detail, sessions::detail),
        route(sessions::__path_conversation, sessions::conversation),
        route(sessions::__path_delete, sessions::delete),
        route(sessions::__path_message, sessions::message),
        route(sessions::__path_file, sessions::file),
        route(sessions::__path_stop, sessions::stop),
        route(sessions::__path_events, sessions::events),
        route(proposals::__path_list, proposals::list),
        route(proposals::__path_detail, proposals::detail),
        route(proposals::__path_accept, proposals::accept),
        route(proposals::__path_reject, proposals::reject),
        route(proposals::__path_decide, proposals::decide),
        route(tools::__path_list, tools::list),
        route(tools::__path_detail, tools::detail),
        route(tools::__path_revoke, tools::revoke),
        route(tools::__path_clear_taint, tools::clear_taint),
        route(settings::__path_host, settings::host),
        route(settings::__path_tool_propose, settings::tool_propose),
        route(
            settings::__path_set_tool_propose,
            settings::set_tool_propose,
        ),
        route(approvals::__path_list, approvals::list),
        route(approvals::__path_answer, approvals::answer),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn to_value(value: &impl serde::Serialize) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(value).map_err(|_| ApiError::internal())
}
