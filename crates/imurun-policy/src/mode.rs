//! Permission modes, category toggles, and the mode table: what each mode decides for each
//! category of tool once the hard denials have passed. `docs/permissions.md` holds the same
//! table, and a test compares the two cell by cell.

use std::fmt;
use std::str::FromStr;

use imurun_core::{Decision, ToolCategory};
use serde::{Deserialize, Serialize};

/// `permissions.mode`: how much runs without asking. Ordered from most to least cautious.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Everything that is not pure computation asks first.
    Ask,
    /// Reads (files and the network) run; writes, deletes and shell commands ask. The default.
    #[default]
    AllowReads,
    /// Reads and writes inside the workspace run; deletes and shell commands ask.
    AllowEdits,
    /// Everything runs without asking; the hard denials still hold.
    AllowAll,
}

impl Mode {
    /// Every mode, in the order of the table's columns.
    pub const ALL: [Mode; 4] = [
        Mode::Ask,
        Mode::AllowReads,
        Mode::AllowEdits,
        Mode::AllowAll,
    ];

    /// The name used in settings, the CLI and the docs.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::AllowReads => "allow-reads",
            Mode::AllowEdits => "allow-edits",
            Mode::AllowAll => "allow-all",
        }
    }

    /// What this mode decides for a call of `category` that no hard denial stopped.
    pub fn decide(self, category: ToolCategory) -> Decision {
        use Decision::{Allow, Ask};
        use ToolCategory as C;
        match (category, self) {
            // No authority to misuse: the clock, arithmetic. A sub-agent's own calls are each
            // checked against this same table, so starting one needs no question.
            (C::Compute | C::Agent, _) => Allow,
            (_, Mode::AllowAll) => Allow,
            (_, Mode::Ask) => Ask,
            // Network tools fetch (search, weather): they are reads of the outside world.
            (C::Read | C::Network, _) => Allow,
            (C::Write, Mode::AllowEdits) => Allow,
            // Shell is not a sandbox: a command can reach every file the user can, so it asks
            // below allow-all. Deletes cannot be undone, so they ask too.
            // An outside effect imurun cannot check asks until the person allows everything.
            (C::Write | C::Delete | C::Shell | C::External, _) => Ask,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not one of [`Mode::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode `{0}`: expected ask, allow-reads, allow-edits or allow-all")]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == text.trim())
            .ok_or_else(|| UnknownMode(text.to_string()))
    }
}

/// Every tool category, in the order of the table's rows.
pub const CATEGORIES: [ToolCategory; 8] = [
    ToolCategory::Read,
    ToolCategory::Write,
    ToolCategory::Delete,
    ToolCategory::Shell,
    ToolCategory::Network,
    ToolCategory::Compute,
    ToolCategory::Agent,
    ToolCategory::External,
];

/// The category toggles. A toggle that is off denies its categories in every mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Toggles {
    /// `readFiles`: reading files.
    pub read_files: bool,
    /// `writeFiles`: writing and deleting files.
    pub write_files: bool,
    /// `runShell`: running shell commands.
    pub run_shell: bool,
    /// `network`: tools that reach the network, and external tools (connectors, MCP), which
    /// go over it too.
    pub network: bool,
}

impl Default for Toggles {
    fn default() -> Self {
        Self {
            read_files: true,
            write_files: true,
            run_shell: true,
            network: true,
        }
    }
}

impl Toggles {
    /// The settings name of the toggle that turns `category` off, and whether it is on.
    /// Compute and agent calls have no toggle; external calls (connectors, MCP servers) are
    /// under `network`: they reach other machines too.
    pub fn for_category(&self, category: ToolCategory) -> Option<(&'static str, bool)> {
        match category {
            ToolCategory::Read => Some(("readFiles", self.read_files)),
            ToolCategory::Write | ToolCategory::Delete => Some(("writeFiles", self.write_files)),
            ToolCategory::Shell => Some(("runShell", self.run_shell)),
            ToolCategory::Network | ToolCategory::External => Some(("network", self.network)),
            ToolCategory::Compute | ToolCategory::Agent => None,
        }
    }
}

/// The mode table as rows of (category, one decision per mode in [`Mode::ALL`] order).
pub fn mode_table() -> Vec<(ToolCategory, [Decision; 4])> {
    CATEGORIES
        .iter()
        .map(|&category| (category, Mode::ALL.map(|mode| mode.decide(category))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_names_round_trip() {
        for mode in Mode::ALL {
            assert_eq!(mode.as_str().parse::<Mode>(), Ok(mode));
            // Settings files and the CLI use the same names as serde.
            assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
        }
        assert!("allow_all".parse::<Mode>().is_err());
        assert_eq!(Mode::default(), Mode::AllowReads);
    }

    #[test]
    fn toggles_read_settings_names() {
        let toggles: Toggles = serde_json::from_str(r#"{"runShell": false}"#).unwrap();
        assert_eq!(
            toggles,
            Toggles {
                run_shell: false,
                ..Toggles::default()
            }
        );
    }
}
