//! [`ToolGroup`]: tools offered together — a connector's web service. When many grouped
//! tools are available, a turn's prompt lists only the groups its question points at; the
//! others stay runnable by name.

use std::fmt;

/// A group of tools, such as the tools of one connected web service.
pub trait ToolGroup: Send + Sync + fmt::Debug {
    /// A short, stable id: `github`.
    fn id(&self) -> &str;

    /// The name people know it by, for the line that names hidden groups: `GitHub`.
    fn display_name(&self) -> &str;

    /// Whether `text` (a question, a recent message) points at this group.
    fn points_at(&self, text: &str) -> bool;
}
