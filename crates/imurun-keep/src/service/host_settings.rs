//! Switches the operator sets for every host on the database: today one, whether agents may
//! propose tools (`tool.propose`). Each setting is a document sealed by the host key, its
//! version held by a high-water mark in the database and in the Keep folder of every host that
//! set or read it, so a row deleted or rolled back in the database turns the switch off rather
//! than back on.

use serde::{Deserialize, Serialize};

use super::{HostSettings, Identity, append};
use crate::KeepError;
use crate::journal_detail::HostDetail;

/// The documents' kind.
pub(crate) const HOST_SETTING_KIND: &str = "host_setting";

/// The subject of the `tool.propose` switch.
const TOOL_PROPOSE: &str = "tool_propose";

/// A switch's stored document (sealed by the host key): `{"enabled": bool}`.
#[derive(Debug, Serialize, Deserialize)]
struct Switch {
    enabled: bool,
}

/// The `tool.propose` switch, as the operator reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepToolPropose))]
pub struct ToolProposeView {
    /// Whether agents may propose tools on every host sharing this database.
    pub enabled: bool,
    /// How many times it was set (0: never; on by default).
    pub version: i64,
    /// Why it is off without the operator having said so (a setting edited in the database).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The host's settings that matter to the operator, read-only: they are set in its
/// configuration (and the `tool.propose` switch by its own route), never from the page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = KeepHostView))]
pub struct HostView {
    /// This host's name among the hosts that share the database (`keep.host_id`).
    pub host_id: String,
    /// `sqlite` (one host) or `postgresql` (hosts may share it).
    pub database: &'static str,
    /// Whether this host runs agents' cells.
    pub cells: bool,
    /// The loopback ports cells' egress may reach (`keep.egress_loopback_ports`), empty by
    /// default.
    pub egress_loopback_ports: Vec<u16>,
    /// Whether agents may propose tools, on every host of the database.
    pub tool_propose: ToolProposeView,
}

impl HostSettings<'_> {
    /// The host's settings that matter, read-only (operator only).
    pub async fn view(self, caller: &Identity) -> Result<HostView, KeepError> {
        caller.require_operator()?;
        let cells = self.keep.cells();
        Ok(HostView {
            host_id: self.keep.host_id().to_owned(),
            database: match self.core.store().backend() {
                imurun_store::Backend::Sqlite => "sqlite",
                imurun_store::Backend::Postgres => "postgresql",
            },
            cells: cells.is_some(),
            egress_loopback_ports: cells
                .map_or_else(Vec::new, |cells| cells.loopback_ports().to_vec()),
            tool_propose: self.tool_propose_in_force().await?,
        })
    }

    /// Turns `tool.propose` on or off for every host on the database (operator only).
    /// Proposals already pending stay pending: each still needs its person's device-signed
    /// decision, and may be approved or denied.
    pub async fn set_tool_propose(
        self,
        caller: &Identity,
        enabled: bool,
    ) -> Result<ToolProposeView, KeepError> {
        caller.require_operator()?;
        let mut tx = self.core.store().keep_begin().await?;
        let in_database = tx.high_water(HOST_SETTING_KIND, TOOL_PROPOSE).await?;
        let version = self
            .core
            .high_water(HOST_SETTING_KIND, TOOL_PROPOSE, in_database)?
            + 1;
        let text = serde_json::to_string(&Switch { enabled })
            .map_err(|error| crate::RuleError::Canonical(error.to_string()))?;
        self.core
            .put_sealed_document(&mut tx, HOST_SETTING_KIND, TOOL_PROPOSE, version, &text)
            .await?;
        tx.raise_high_water(HOST_SETTING_KIND, TOOL_PROPOSE, version)
            .await?;
        let detail = HostDetail::ToolPropose { enabled, version };
        append(&mut tx, caller, None, "host:tool_propose", detail).await?;
        self.core
            .commit_and_mark(tx, (HOST_SETTING_KIND, TOOL_PROPOSE.to_owned(), version))
            .await?;
        Ok(ToolProposeView {
            enabled,
            version,
            refused: None,
        })
    }

    /// The `tool.propose` switch in force (operator only).
    pub async fn tool_propose(self, caller: &Identity) -> Result<ToolProposeView, KeepError> {
        caller.require_operator()?;
        self.tool_propose_in_force().await
    }

    /// The `tool.propose` switch in force: on when never set; off when the stored setting is
    /// not this host's, or older than its mark.
    pub(crate) async fn tool_propose_in_force(self) -> Result<ToolProposeView, KeepError> {
        let in_database = self
            .core
            .store()
            .keep_high_water(HOST_SETTING_KIND, TOOL_PROPOSE)
            .await?;
        let highest = self
            .core
            .high_water(HOST_SETTING_KIND, TOOL_PROPOSE, in_database)?;
        let row = self
            .core
            .store()
            .keep_document(HOST_SETTING_KIND, TOOL_PROPOSE)
            .await?;
        let refused = |why: &str| ToolProposeView {
            enabled: false,
            version: highest,
            refused: Some(why.to_owned()),
        };
        let Some(row) = row else {
            return Ok(match highest {
                0 => ToolProposeView {
                    enabled: true,
                    version: 0,
                    refused: None,
                },
                _ => refused("the setting was removed from the database"),
            });
        };
        if self.core.check_document_row(&row).is_err() {
            return Ok(refused("the stored setting does not hold this host's seal"));
        }
        if row.version < highest {
            return Ok(refused("the stored setting is older than the last one set"));
        }
        let enabled = serde_json::from_str::<Switch>(&row.envelope)
            .ok()
            .map(|switch| switch.enabled);
        // A sealed setting newer than this host's own mark raises it: from now on this host
        // refuses to go back below it, whoever set it, so a rollback or a removal in the
        // database reads as off here too. A mark that cannot be written is logged: the
        // database's mark still holds.
        if enabled.is_some()
            && row.version > self.core.high_water(HOST_SETTING_KIND, TOOL_PROPOSE, 0)?
            && let Err(error) =
                self.core
                    .raise_high_water_file(HOST_SETTING_KIND, TOOL_PROPOSE, row.version)
        {
            tracing::warn!("the tool.propose setting's mark could not be kept: {error}");
        }
        Ok(match enabled {
            Some(enabled) => ToolProposeView {
                enabled,
                version: row.version,
                refused: None,
            },
            None => refused("the stored setting does not read"),
        })
    }
}
