//! What the operating system's sandbox enforces on the processes imurun starts (the shell's
//! commands, stdio MCP servers): reported to the person, never used to relax a rule.

use serde::{Deserialize, Serialize};

/// The sandbox in force on this machine, as `GET /api/permissions` and `imurun config show`
/// report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum SandboxStatus {
    /// Linux's Landlock confines every process imurun starts.
    #[serde(rename_all = "camelCase")]
    Landlock {
        /// The Landlock ABI version in force: the kernel's, up to the newest one imurun uses.
        abi: u32,
        /// Writes, removals, renames and new folders only inside the workspace and the run's
        /// private temporary folder.
        filesystem: bool,
        /// TCP connect and bind refused while the `network` toggle is off (ABI 4 and later).
        network: bool,
        /// Signals to processes outside the sandbox and connections to abstract Unix
        /// sockets made outside it refused (ABI 6 and later).
        scoped: bool,
    },
    /// No sandbox: processes run with the user's own rights, as the policy alone allows.
    None {
        /// Why, in a sentence a person can act on.
        reason: String,
    },
}

impl SandboxStatus {
    /// One line for `imurun config show` and logs.
    pub fn describe(&self) -> String {
        match self {
            Self::Landlock {
                abi,
                filesystem,
                network,
                scoped,
            } => {
                let mut parts = Vec::new();
                if *filesystem {
                    parts.push("writes only in the workspace and a private temporary folder");
                }
                parts.push(if *network {
                    "TCP refused while the network toggle is off"
                } else {
                    "TCP not confined (the kernel's Landlock is older than ABI 4)"
                });
                if *scoped {
                    parts.push("signals and abstract sockets kept inside");
                }
                format!("Landlock ABI {abi}: {}", parts.join("; "))
            }
            Self::None { reason } => format!("none: {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_shape_names_the_kind() {
        let landlock = SandboxStatus::Landlock {
            abi: 7,
            filesystem: true,
            network: true,
            scoped: true,
        };
        assert_eq!(
            serde_json::to_value(&landlock).unwrap(),
            serde_json::json!({"kind": "landlock", "abi": 7, "filesystem": true, "network": true, "scoped": true})
        );
        let none = SandboxStatus::None {
            reason: "no Landlock".into(),
        };
        assert_eq!(
            serde_json::to_value(&none).unwrap(),
            serde_json::json!({"kind": "none", "reason": "no Landlock"})
        );
        assert!(
            landlock
                .describe()
                .starts_with("Landlock ABI 7: writes only")
        );
        assert_eq!(none.describe(), "none: no Landlock");
    }
}
