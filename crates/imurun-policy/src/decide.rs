//! The decision: given the facts of one call, allow, ask or deny, with a reason a person
//! reads. Hard denials come first and hold in every mode; the mode table decides the rest.
//!
//! The policy sees facts, never model text and never a tool's name: the executor extracts
//! the category, the path arguments and the shell command from a validated call.

use imurun_core::{Decision, ToolCategory};
use serde::{Deserialize, Serialize};

use crate::deny::{CommandRisk, command_risk};
use crate::mode::{Mode, Toggles};
use crate::workspace::{PathDenial, Target, Workspace};

/// The most path arguments one call may carry; more is refused rather than checked slowly.
pub const CALL_PATHS_MAX: usize = 64;

/// What the policy needs to know about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFacts {
    pub category: ToolCategory,
    /// Every path argument as written, including a shell call's working folder.
    pub paths: Vec<String>,
    /// The shell command, for shell calls.
    pub command: Option<String>,
    /// The session read untrusted content (a web result, a fetched page, an MCP result) in
    /// this turn or the one before.
    pub tainted: bool,
}

impl CallFacts {
    /// Facts of a call of `category` with no paths and no command yet.
    pub fn new(category: ToolCategory) -> Self {
        Self {
            category,
            paths: Vec::new(),
            command: None,
            tainted: false,
        }
    }

    /// Marks the call as made by a session that read untrusted content.
    pub fn tainted(mut self, tainted: bool) -> Self {
        self.tainted = tainted;
        self
    }

    /// Adds a path argument as written.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.paths.push(path.into());
        self
    }

    /// Sets the shell command.
    pub fn command(mut self, command: impl Into<String>) -> Self {
        self.command = Some(command.into());
        self
    }
}

/// The person's permission settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// `permissions.mode`.
    pub mode: Mode,
    /// `permissions.readFiles`, `writeFiles`, `runShell`, `network`.
    #[serde(flatten)]
    pub toggles: Toggles,
}

/// Which rule produced a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// Hard denial: the category's toggle is off.
    ToggleOff,
    /// Hard denial: more than `CALL_PATHS_MAX` path arguments.
    TooManyPaths,
    /// Hard denial: a path cannot be used (too long, a NUL byte, a symlink loop).
    InvalidPath,
    /// Hard denial: a path resolves outside the workspace.
    OutsideWorkspace,
    /// Hard denial: a path is protected.
    ProtectedPath,
    /// Hard denial: the shell command is on the destructive-command deny-list.
    DestructiveCommand,
    /// The mode table decided.
    ModeTable,
    /// An "ask" became "allow" because a person approved this tool for the session.
    SessionGrant,
    /// Nobody can tell what the shell command runs without running it (its program is
    /// computed, or inline code builds what it runs): denied in `allow-all`, asked elsewhere,
    /// and no remembered grant answers for the person.
    OpaqueCommand,
    /// The session read untrusted content, so a call that can send data out or change things
    /// asks (below `allow-all`), and no remembered grant answers for the person.
    Tainted,
}

impl Rule {
    /// Every hard denial, in the order they are checked.
    pub const HARD_DENIALS: [Rule; 6] = [
        Rule::ToggleOff,
        Rule::TooManyPaths,
        Rule::InvalidPath,
        Rule::OutsideWorkspace,
        Rule::ProtectedPath,
        Rule::DestructiveCommand,
    ];

    /// The rule's name in the docs and in machine-readable output.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::ToggleOff => "toggle-off",
            Rule::TooManyPaths => "too-many-paths",
            Rule::InvalidPath => "invalid-path",
            Rule::OutsideWorkspace => "outside-workspace",
            Rule::ProtectedPath => "protected-path",
            Rule::DestructiveCommand => "destructive-command",
            Rule::ModeTable => "mode-table",
            Rule::SessionGrant => "session-grant",
            Rule::OpaqueCommand => "opaque-command",
            Rule::Tainted => "tainted",
        }
    }
}

/// A decision, the rule that made it, and why, in a sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub decision: Decision,
    pub rule: Rule,
    pub reason: String,
}

impl Verdict {
    fn deny(rule: Rule, reason: impl Into<String>) -> Self {
        Self {
            decision: Decision::Deny,
            rule,
            reason: reason.into(),
        }
    }
}

/// Decides one call: the hard denials in order (toggle, paths, deny-list), then the mode
/// table. Deletes check their paths as entries, so deleting a symlink is judged by where
/// the link is, not where it points.
pub fn check(workspace: &Workspace, settings: &Settings, facts: &CallFacts) -> Verdict {
    if let Some((toggle, false)) = settings.toggles.for_category(facts.category) {
        return Verdict::deny(
            Rule::ToggleOff,
            format!(
                "{} are turned off (`{toggle}` is off)",
                noun(facts.category)
            ),
        );
    }
    if facts.paths.len() > CALL_PATHS_MAX {
        return Verdict::deny(
            Rule::TooManyPaths,
            format!(
                "the call has {} paths, more than the {CALL_PATHS_MAX} one call may have",
                facts.paths.len()
            ),
        );
    }
    let target = if facts.category == ToolCategory::Delete {
        Target::Entry
    } else {
        Target::Follow
    };
    for path in &facts.paths {
        if let Err(denial) = workspace.check_path(path, target) {
            let rule = match denial {
                PathDenial::Outside { .. } => Rule::OutsideWorkspace,
                PathDenial::Protected { .. } => Rule::ProtectedPath,
                PathDenial::Invalid { .. } => Rule::InvalidPath,
            };
            return Verdict::deny(rule, denial.to_string());
        }
    }
    let opaque = match facts.command.as_deref().and_then(command_risk) {
        Some(CommandRisk::Destructive(reason)) => {
            return Verdict::deny(Rule::DestructiveCommand, reason);
        }
        Some(CommandRisk::Opaque(reason)) => Some(reason),
        None => None,
    };
    let verdict = table_verdict(settings.mode, facts.category);
    if let Some(reason) = opaque
        && verdict.decision != Decision::Deny
    {
        // `allow-all` answers without a person; a command nobody can read is not one it
        // may answer for. Elsewhere the person sees the command and decides.
        let decision = if settings.mode == Mode::AllowAll {
            Decision::Deny
        } else {
            Decision::Ask
        };
        return Verdict {
            decision,
            rule: Rule::OpaqueCommand,
            reason,
        };
    }
    if facts.tainted
        && settings.mode != Mode::AllowAll
        && verdict.decision != Decision::Deny
        && TAINT_ASKS.contains(&facts.category)
    {
        return Verdict {
            decision: Decision::Ask,
            rule: Rule::Tainted,
            reason: TAINT_REASON.to_string(),
        };
    }
    verdict
}

/// What the person reads on the card of a call that asks because the session is tainted.
pub const TAINT_REASON: &str = "this session read untrusted content";

/// The categories that ask while a session is tainted: the ways to send data out or change
/// things. A page that tells the model to put your files into a URL needs one of them.
pub const TAINT_ASKS: [ToolCategory; 5] = [
    ToolCategory::Network,
    ToolCategory::External,
    ToolCategory::Shell,
    ToolCategory::Write,
    ToolCategory::Delete,
];

/// The mode table's verdict for a call no hard denial stopped.
pub fn table_verdict(mode: Mode, category: ToolCategory) -> Verdict {
    let decision = mode.decide(category);
    let reason = match (category, decision) {
        (ToolCategory::Compute, _) => "pure computation is always allowed".to_string(),
        (ToolCategory::Agent, _) => {
            "starting a sub-agent is always allowed; each of its calls is checked on its own"
                .to_string()
        }
        (_, Decision::Allow) => format!("{} are allowed in {mode} mode", noun(category)),
        (_, _) => format!("{} ask first in {mode} mode", noun(category)),
    };
    Verdict {
        decision,
        rule: Rule::ModeTable,
        reason,
    }
}

fn noun(category: ToolCategory) -> &'static str {
    match category {
        ToolCategory::Read => "file reads",
        ToolCategory::Write => "file writes",
        ToolCategory::Delete => "deletes",
        ToolCategory::Shell => "shell commands",
        ToolCategory::Network => "network tools",
        ToolCategory::Compute => "computations",
        ToolCategory::Agent => "sub-agents",
        ToolCategory::External => "outside actions (connectors that send or change, MCP tools)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_the_config_names() {
        let settings: Settings =
            serde_json::from_str(r#"{"mode": "ask", "runShell": false}"#).unwrap();
        assert_eq!(settings.mode, Mode::Ask);
        assert!(!settings.toggles.run_shell && settings.toggles.read_files);
        assert_eq!(
            serde_json::from_str::<Settings>("{}").unwrap(),
            Settings::default()
        );
    }

    #[test]
    fn shared_types_cross_threads() {
        // The executor shares one workspace and one grant table between turns.
        fn shareable<T: Send + Sync>() {}
        shareable::<Workspace>();
        shareable::<crate::Grants>();
        shareable::<Verdict>();
    }
}
